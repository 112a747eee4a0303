#pragma once
// The pod annotation API (DESIGN.md, "Pod annotation API"): dynamic port requests and the pool.
// Annotations are written by pod authors, so everything here is untrusted and checked against a
// strict grammar before it reaches the agent.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "annotations/annotation_names.h"
#include "common/error.h"
#include "lease/lease.h"

namespace hostport::annotations {

inline constexpr std::size_t kMaxPortsAnnotationBytes = 4096;

struct PortAnnotations {
  std::vector<DynamicPortRequest> dynamics;  // in annotation order
  std::string pool;                          // empty: the agent's default pool
  bool sticky = true;  // hostport.io/sticky: "false" opts out of getting previous ports back
  friend bool operator==(const PortAnnotations&, const PortAnnotations&) = default;
};

/// Whose ports an annotation asks for: a pod in a network namespace of its own, whose host ports
/// forward to container ports, or a hostNetwork pod (issue 25), whose process binds the host port
/// itself, so its entries name no containerPort.
enum class PodNetwork { kOwn, kHost };

/// Reads hostport.io/ports and hostport.io/pool from the pod annotations object
/// (PluginConfig::podAnnotations); other keys are ignored, and JSON null means no annotations.
///
/// hostport.io/ports: `name=containerPort[-lastPort][/protocol]` entries separated by commas,
/// e.g. "grpc=19805, rtp=20000-20009/udp, game=7000/tcpudp".
///  - name: a DNS label ([a-z0-9]([a-z0-9-]*[a-z0-9])?, at most 63), unique in the annotation;
///  - ports: decimal 1..65535; a range needs first <= last and at most kMaxRangeWidth
///    ports; protocol tcp (default), udp, sctp or tcpudp, case-insensitive;
///  - at most kMaxPortsPerRequest entries and kMaxPortsAnnotationBytes bytes.
/// Leniency, chosen for hand-written and templated YAML: blanks (space, tab, CR, LF) around an
/// entry are ignored; one trailing comma is ignored; an empty or blank value asks for nothing.
/// Blanks inside an entry, and empty entries elsewhere (",a=1", "a=1,,b=2"), are errors.
/// For a hostNetwork pod (`network` kHost) an entry is `name[*count][/protocol]`: one port, or a
/// block of `count` consecutive ports (1..kMaxRangeWidth), e.g. "game/udp, rtp*10/udp"; its
/// requests have containerPort 0. Each form is refused in the other pod, naming the right one.
/// hostport.io/pool: a DNS label; absent leaves `pool` empty.
/// hostport.io/sticky: "true" (the default) or "false", exactly: a pod that opts out is not
/// offered the ports its name had last time, and the agent forgets what it remembered of it.
///
/// Errors are kInvalidArgument (CNI code 7) naming the annotation and the bad entry, quoted and
/// cut: `annotation hostport.io/ports: bad entry "rtp=20000-19000/udp": range end 19000 is below
/// its start 20000`. A value that is not a string is an error naming the key.
Result<PortAnnotations> parsePortAnnotations(const nlohmann::json& annotations,
                                             PodNetwork network = PodNetwork::kOwn);

}  // namespace hostport::annotations
