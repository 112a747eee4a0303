#include "agent/service/api_handlers.h"

#include "agent/api/attachment_key.h"
#include "agent/api/http_errors.h"
#include "agent/api/json_codec.h"
#include "agent/api/routes.h"

namespace hostport::agent::service {
namespace {

using api::HttpResponse;

/// What every handler works with; the references outlive the router (agent/daemon/daemon.h).
struct ApiContext {
  AgentService& service;
  Metrics& metrics;
  const std::atomic<bool>& ready;
};

using ApiHandler = void (*)(const ApiContext&, const server::HttpRequest&,
                            const server::PathParams&, server::Responder);

HttpResponse jsonResponse(const nlohmann::json& body, unsigned status = 200) {
  return {status, "application/json", api::dumpBody(body)};
}

HttpResponse textResponse(std::string body, unsigned status = 200) {
  return {status, "text/plain; version=0.0.4", std::move(body)};
}

/// Errors leave through one table (api/http_errors.h), and each is counted by its machine code.
HttpResponse errorResponseFor(const Error& error, Metrics& metrics) {
  metrics.countError(std::string(api::machineCode(error.code)));
  return jsonResponse(api::errorBody(error), api::httpStatus(error.code));
}

Result<AttachmentKey> keyFromPath(const server::PathParams& params) {
  return api::checkAttachmentKey({params.at("containerId"), params.at("ifname")});
}

std::string queryValue(const server::HttpRequest& request, const std::string& name) {
  const auto found = request.query.find(name);
  return found == request.query.end() ? std::string() : found->second;
}

/// Answers with the released leases under "released", or the error.
auto answerReleased(const ApiContext& context, server::Responder respond) {
  return [&metrics = context.metrics,
          respond = std::move(respond)](Result<std::vector<Lease>> released) {
    respond(released ? jsonResponse(api::leaseListBody("released", *released))
                     : errorResponseFor(released.error(), metrics));
  };
}

// One handler per route (routes.h lists them).

/// POST /v1/attachments: allocate.
void allocateAttachment(const ApiContext& context, const server::HttpRequest& request,
                        const server::PathParams&, server::Responder respond) {
  auto body = api::parseBody(request.body);
  auto parsed = body ? api::allocationRequestFromJson(*body)
                     : Result<AllocationRequest>(std::unexpected(body.error()));
  if (!parsed) return respond(errorResponseFor(parsed.error(), context.metrics));
  context.service.allocate(*parsed, [&metrics = context.metrics,
                                     respond = std::move(respond)](Result<Lease> lease) {
    respond(lease ? jsonResponse(api::toJson(*lease)) : errorResponseFor(lease.error(), metrics));
  });
}

/// GET /v1/attachments?namespace=&pod=: the leases, filtered.
void listAttachments(const ApiContext& context, const server::HttpRequest& request,
                     const server::PathParams&, server::Responder respond) {
  const auto leases =
      context.service.list(queryValue(request, "namespace"), queryValue(request, "pod"));
  respond(jsonResponse(api::leaseListBody("leases", leases)));
}

/// DELETE /v1/attachments?containerId=X: every interface of one container.
void releaseContainer(const ApiContext& context, const server::HttpRequest& request,
                      const server::PathParams&, server::Responder respond) {
  const auto containerId = queryValue(request, "containerId");
  if (auto checked = api::checkContainerId(containerId); !checked) {
    return respond(errorResponseFor(checked.error(), context.metrics));
  }
  context.service.releaseContainer(containerId, answerReleased(context, std::move(respond)));
}

/// GET /v1/attachments/{containerId}/{ifname}: one lease, or 404.
void getAttachment(const ApiContext& context, const server::HttpRequest&,
                   const server::PathParams& params, server::Responder respond) {
  auto key = keyFromPath(params);
  if (!key) return respond(errorResponseFor(key.error(), context.metrics));
  auto lease = context.service.get(*key);
  if (!lease) {
    return respond(errorResponseFor(Error{ErrorCode::kNotFound, "no lease for " + key->str(), {}},
                                    context.metrics));
  }
  respond(jsonResponse(api::toJson(*lease)));
}

/// DELETE /v1/attachments/{containerId}/{ifname}: release one lease (none there is no error).
void releaseAttachment(const ApiContext& context, const server::HttpRequest&,
                       const server::PathParams& params, server::Responder respond) {
  auto key = keyFromPath(params);
  if (!key) return respond(errorResponseFor(key.error(), context.metrics));
  context.service.release(*key, [&metrics = context.metrics, respond = std::move(respond)](
                                    Result<std::optional<Lease>> released) {
    respond(released ? jsonResponse(api::releasedBody(*released))
                     : errorResponseFor(released.error(), metrics));
  });
}

/// POST /v1/gc {"network", "valid": [key...]}: release the network's other leases.
void collectGarbage(const ApiContext& context, const server::HttpRequest& request,
                    const server::PathParams&, server::Responder respond) {
  auto body = api::parseBody(request.body);
  auto gc =
      body ? api::gcRequestFromJson(*body) : Result<api::GcRequest>(std::unexpected(body.error()));
  if (!gc) return respond(errorResponseFor(gc.error(), context.metrics));
  context.service.collectGarbage(gc->network, {gc->valid.begin(), gc->valid.end()},
                                 answerReleased(context, std::move(respond)));
}

/// GET /v1/pools.
void listPools(const ApiContext& context, const server::HttpRequest&, const server::PathParams&,
               server::Responder respond) {
  respond(jsonResponse(api::poolsBody(context.service.poolRows())));
}

/// GET /healthz: fails once the lease journal failed (the agent then exits; see lifecycle.h).
void checkHealth(const ApiContext& context, const server::HttpRequest&, const server::PathParams&,
                 server::Responder respond) {
  respond(context.service.healthy() ? textResponse("ok\n")
                                    : textResponse("lease journal failed; restart needed\n", 500));
}

/// GET /readyz: ready once recovery is done and the socket is served, while healthy.
void checkReadiness(const ApiContext& context, const server::HttpRequest&,
                    const server::PathParams&, server::Responder respond) {
  respond(context.ready.load() && context.service.healthy() ? textResponse("ready\n")
                                                            : textResponse("not ready\n", 503));
}

}  // namespace

void registerApiHandlers(server::Router& router, AgentService& service, Metrics& metrics,
                         const std::atomic<bool>& ready) {
  const ApiContext context{service, metrics, ready};
  const auto route = [&router, context](std::string method, std::string_view path,
                                        ApiHandler handler) {
    router.add(std::move(method), path,
               [context, handler](const server::HttpRequest& request,
                                  const server::PathParams& params, server::Responder respond) {
                 handler(context, request, params, std::move(respond));
               });
  };
  const std::string attachments(api::kAttachmentsPath);
  const std::string oneAttachment = attachments + "/{containerId}/{ifname}";
  route("POST", attachments, allocateAttachment);
  route("GET", attachments, listAttachments);
  route("DELETE", attachments, releaseContainer);
  route("GET", oneAttachment, getAttachment);
  route("DELETE", oneAttachment, releaseAttachment);
  route("POST", api::kGcPath, collectGarbage);
  route("GET", api::kPoolsPath, listPools);
  route("GET", api::kHealthzPath, checkHealth);
  route("GET", api::kReadyzPath, checkReadiness);
  registerMetricsHandler(router, service);
}

void registerMetricsHandler(server::Router& router, AgentService& service) {
  router.add(
      "GET", api::kMetricsPath,
      [&service](const server::HttpRequest&, const server::PathParams&, server::Responder respond) {
        respond(textResponse(service.metricsText()));
      });
}

}  // namespace hostport::agent::service
