#include "agent/service/api_handlers.h"

#include "agent/api/http_errors.h"
#include "agent/api/json_codec.h"
#include "agent/api/routes.h"
#include "common/identifiers.h"
#include "common/quote.h"

namespace hostport::agent {
namespace {

using api::HttpResponse;

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

Result<AttachmentKey> keyFromPath(const PathParams& params) {
  AttachmentKey key{params.at("containerId"), params.at("ifname")};
  if (!isContainerId(key.containerId)) {
    return fail(ErrorCode::kInvalidArgument,
                "containerId: " + quoteText(key.containerId) + " is not a container ID");
  }
  if (!isIfname(key.ifname)) {
    return fail(ErrorCode::kInvalidArgument,
                "ifname: " + quoteText(key.ifname) + " is not an interface name");
  }
  return key;
}

std::string queryValue(const HttpRequest& request, const std::string& name) {
  const auto found = request.query.find(name);
  return found == request.query.end() ? std::string() : found->second;
}

}  // namespace

void registerApiHandlers(Router& router, AgentService& service, Metrics& metrics,
                         const std::atomic<bool>& ready) {
  const std::string attachments(api::kAttachmentsPath);

  router.add(
      "POST", attachments, [&](const HttpRequest& request, const PathParams&, Responder respond) {
        auto body = api::parseBody(request.body);
        auto parsed = body ? api::allocationRequestFromJson(*body)
                           : Result<AllocationRequest>(std::unexpected(body.error()));
        if (!parsed) return respond(errorResponseFor(parsed.error(), metrics));
        service.allocate(*parsed, [&metrics, respond = std::move(respond)](Result<Lease> lease) {
          respond(lease ? jsonResponse(api::toJson(*lease))
                        : errorResponseFor(lease.error(), metrics));
        });
      });

  router.add("GET", attachments,
             [&](const HttpRequest& request, const PathParams&, Responder respond) {
               const auto leases =
                   service.list(queryValue(request, "namespace"), queryValue(request, "pod"));
               respond(jsonResponse(api::leaseListBody("leases", leases)));
             });

  router.add("DELETE", attachments,
             [&](const HttpRequest& request, const PathParams&, Responder respond) {
               const auto containerId = queryValue(request, "containerId");
               if (!isContainerId(containerId)) {
                 return respond(errorResponseFor(
                     Error{ErrorCode::kInvalidArgument,
                           "containerId: " + quoteText(containerId) + " is not a container ID",
                           {}},
                     metrics));
               }
               service.releaseContainer(containerId, [&metrics, respond = std::move(respond)](
                                                         Result<std::vector<Lease>> released) {
                 respond(released ? jsonResponse(api::leaseListBody("released", *released))
                                  : errorResponseFor(released.error(), metrics));
               });
             });

  const std::string oneAttachment = attachments + "/{containerId}/{ifname}";
  router.add("GET", oneAttachment,
             [&](const HttpRequest&, const PathParams& params, Responder respond) {
               auto key = keyFromPath(params);
               if (!key) return respond(errorResponseFor(key.error(), metrics));
               auto lease = service.get(*key);
               if (!lease) {
                 return respond(errorResponseFor(
                     Error{ErrorCode::kNotFound, "no lease for " + key->str(), {}}, metrics));
               }
               respond(jsonResponse(api::toJson(*lease)));
             });

  router.add("DELETE", oneAttachment,
             [&](const HttpRequest&, const PathParams& params, Responder respond) {
               auto key = keyFromPath(params);
               if (!key) return respond(errorResponseFor(key.error(), metrics));
               service.release(*key, [&metrics, respond = std::move(respond)](
                                         Result<std::optional<Lease>> released) {
                 respond(released ? jsonResponse(api::releasedBody(*released))
                                  : errorResponseFor(released.error(), metrics));
               });
             });

  router.add("POST", std::string(api::kGcPath),
             [&](const HttpRequest& request, const PathParams&, Responder respond) {
               auto body = api::parseBody(request.body);
               auto valid = body
                                ? api::gcRequestFromJson(*body)
                                : Result<std::vector<AttachmentKey>>(std::unexpected(body.error()));
               if (!valid) return respond(errorResponseFor(valid.error(), metrics));
               service.collectGarbage(
                   {valid->begin(), valid->end()},
                   [&metrics, respond = std::move(respond)](Result<std::vector<Lease>> released) {
                     respond(released ? jsonResponse(api::leaseListBody("released", *released))
                                      : errorResponseFor(released.error(), metrics));
                   });
             });

  router.add("GET", std::string(api::kPoolsPath),
             [&](const HttpRequest&, const PathParams&, Responder respond) {
               std::vector<api::PoolUsageRow> rows;
               const auto specs = service.pools();
               for (const auto& usage : service.usage()) {
                 api::PoolUsageRow row{usage.name, usage.size, usage.used, usage.size - usage.used,
                                       {},         {}};
                 for (const auto& spec : specs) {
                   if (spec.name != usage.name) continue;
                   row.strategy = std::string(strategyName(spec.strategy));
                   row.ranges = spec.ranges;
                 }
                 rows.push_back(std::move(row));
               }
               respond(jsonResponse(api::poolsBody(rows)));
             });

  router.add("GET", std::string(api::kHealthzPath),
             [&](const HttpRequest&, const PathParams&, Responder respond) {
               respond(service.healthy()
                           ? textResponse("ok\n")
                           : textResponse("lease journal failed; restart needed\n", 500));
             });

  router.add("GET", std::string(api::kReadyzPath),
             [&](const HttpRequest&, const PathParams&, Responder respond) {
               respond(ready.load() && service.healthy() ? textResponse("ready\n")
                                                         : textResponse("not ready\n", 503));
             });

  router.add("GET", std::string(api::kMetricsPath),
             [&](const HttpRequest&, const PathParams&, Responder respond) {
               respond(textResponse(service.metricsText()));
             });
}

}  // namespace hostport::agent
