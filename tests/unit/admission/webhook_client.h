#pragma once
// The admission server's tests' client: TLS to 127.0.0.1 trusting only the CA the server keeps in
// its Secret (in the fake API server), and checking the Service's name, as kube-apiserver trusts
// the caBundle and calls the webhook.

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

#include "kube/base64.h"
#include "kube/https_transport.h"
#include "tests/fakes/fake_kube_apiserver.h"
#include "tests/support/result_assertions.h"

namespace hostport::admission::samples {

inline constexpr std::string_view kWebhookSecret =
    "/api/v1/namespaces/hostport/secrets/hostport-admission-tls";

/// A kept-alive client of the webhook at 127.0.0.1:`port`.
inline std::unique_ptr<kube::HttpsTransport> webhookClient(const kube::FakeKubeApiServer& api,
                                                           uint16_t port) {
  const nlohmann::json secret = api.object(kWebhookSecret).value();
  auto ca = kube::decodeBase64(secret["data"]["ca.crt"].get<std::string>(), "ca.crt");
  EXPECT_OK(ca);
  kube::ClusterConfig config;
  config.host = "127.0.0.1";
  config.port = port;
  config.caPem = *ca;
  config.tlsServerName = "hostport-admission.hostport.svc";  // what the API server checks
  auto transport = kube::HttpsTransport::create(config);
  EXPECT_OK(transport);
  return std::move(*transport);
}

}  // namespace hostport::admission::samples
