# Assembles docs/benchmarks.json from one run's raw measurements (scripts/bench.sh passes them
# with --arg/--argjson; run with `jq -n -f bench/results.jq ...`):
#   strings  $date $mode $kernel $cpu $memory $loadStart $loadEnd $commit $dirty ("yes"/"no")
#            $pluginsVersion $iptables $nft $sizes $reconcileSizes
#   numbers  $cores $seconds $samples $portmapSamples $bulk $tcpSeconds $tcpRounds $leases
#            $kibSnapshot $kibJournal (null when the recovery section did not run)
#            $passSamples $flushRounds $reconcileProbes
#   arrays   $hostport $portmap $agentPlugin (hostport-bench-cni lines, one per size, then a
#            {"done": true} line), $load (hostport-bench-agent-load), $floor (--exec-floor),
#            $admission (hostport-bench-admission)
#            $claims (hostport-bench-claims)
#   objects  $recEmpty $recSnapshot $recJournal (hostport-bench-agent-startup, or null)
#   array    $reconcile (one object per size from bench.sh's reconcile_size)
#   number   $udpSamples; array $cold (hostport-bench-cni --cold-add lines with a "kind");
#   object   $churn (hostport-bench-cni --churn-seconds, or null); $sectionSeconds

def rows($x): [$x[] | select(.done != true) | del(.addSamplesMs, .delSamplesMs)];
def fin($x): ([$x[] | select(.done == true)] | first);
# min, median (nearest rank) and max of numbers; null for none.
def spread: sort | if length == 0 then null
  else {n: length, min: first, median: .[(length - 1) / 2 | floor], max: last} end;
# Nearest-rank percentile of numbers; null for none.
def pct($p): sort | if length == 0 then null
  else .[([((($p / 100) * length) | ceil), 1] | max) - 1] end;
def summary: if length == 0 then null
  else {n: length, p50: pct(50), p99: pct(99), min: min, max: max} end;
# Worst (largest) of a list of {value, n}; null for none.
def worst: if length == 0 then null else max_by(.value) end;
{
  date: $date, mode: $mode, seconds: $seconds, sectionSeconds: $sectionSeconds,
  machine: {cores: $cores, cpu: $cpu, memory: $memory, kernel: $kernel,
            loadAverageStart: $loadStart, loadAverageEnd: $loadEnd},
  versions: {hostport: ($commit + (if $dirty == "yes" then " (uncommitted changes)" else "" end)),
             containernetworkingPlugins: $pluginsVersion, iptables: $iptables, nft: $nft},
  method: {
    sizes: $sizes, samplesPerSize: $samples, portmapSamplesPerSize: $portmapSamples,
    mappingsPerPrepopulationAdd: $bulk,
    cniVersion: "1.0.0",
    prevResult: "one real bridge (host-local) ADD per plugin for the measured pod netns; measured ADD/DEL samples reuse it with a distinct container ID each (ADD then DEL); prepopulated mappings come from the same plugin ADD in bulk, one fabricated pod per ADD with the prevResult IP rewritten to a distinct 10.88.x.y",
    latency: "wall time from fork to reaping of the plugin process, run in the node netns with the CNI_* env and the config on stdin; p99 is nearest-rank over the samples",
    datapath: "hostport-bench-tcp: connect, read 1 byte, close (SO_LINGER 0), 2 client threads, from the node netns to 192.0.2.1:hostPort (output hook DNAT) and, alternating, straight to the pod IP (the pod server has 2 accept threads); rates are medians of the rounds, ratioToDirect the median of the per-round ratios; conntrack flushed before each round",
    tcpSecondsPerRound: $tcpSeconds, tcpRounds: $tcpRounds,
    udpSamplesPerRound: $udpSamples,
    udp: "hostport-bench-tcp udp: per request a fresh UDP socket bound to the next source port (a new 5-tuple, so a new conntrack entry that consults the DNAT map), one byte to 192.0.2.1:hostPort (or straight to the pod IP), the pod's echo awaited, one in flight; each round through the host port, then direct; p50/p99 are medians over the rounds of each round's figure, ratioToDirect the median of the per-round p50 ratios (p99RatioToDirect: of the p99 ratios)",
    portSpace: "N counts mappings of both protocols: up to 65535 all TCP, past it TCP full and UDP on top; ports 65530-65533 (the measured samples) and 65535 (the datapath) of each protocol are kept out of prepopulation, so a full protocol holds 65530 (see installed); the agent's pool is 1-65535, without a metrics listener and left out of ip_local_reserved_ports",
    cold: "the first ADD on a fresh node: each sample a new node netns (lo, a node IP, a route to the pod subnet, no nft table) and one ADD of a pod (then its DEL); standalone the ADD lays the table out; with the agent, hostport-agent started on that empty node first (its start-up pass lays the table out) and the ADD is the first it serves",
    churn: "hostport-agent with the given leases installed by the plugin's ADD (bulk, as the CNI section), then ADD+DEL pairs of one dynamic port each, started at a fixed rate from a schedule (open loop) by several worker threads, each pair two plugin processes; per window (by scheduled start): ADD and DEL latency, pairs completed per second, failures, the start lag behind the schedule, and at the window's end the agent's VmRSS and the state dir's journal and snapshot sizes",
    agent: "hostport-agent in its own netns, state dir on the root filesystem (fdatasync on), hostport-bench-agent-load through AgentClient (one connection per call); a round trip is allocate (1 dynamic TCP port) then release",
    admission: "hostport-admission in its own netns with cert-manager's files (no API server), its default threads (one per core), logs at warn; hostport-bench-admission: C threads, each with one kept-alive TLS connection (kube::HttpsTransport, opened before the clock starts), POST back to back for the section's seconds, alternately /validate and /mutate, of a 3.2 KB Deployment pod with managedFields asking game=7777/udp from a udp pool; latency from the request written to the whole answer read; a failure is a transport error, a status other than 200, or a uid or verdict not the expected one; handshakeMs: new connections, each connect + TLS handshake + one GET /healthz; the clients and the server share the machine's cores",
    claims: "the fake API server (tests/fakes/fake-kube-apiserver, a process: no API server runs here) and R hostport-admission processes with cert-manager's files and a kubeconfig of the fake, a cluster pool of 20,000 ports, their default threads (one per core), logs at warn, all in one netns of their own; hostport-bench-claims: 16 threads, each with one kept-alive TLS connection to replica (thread mod R), POST /claim reviews of a 3.2 KB pod named claim-<n> (so a new holder each) until N are claimed; latency from the request written to the whole answer read; every run starts from an empty API server; a failure is a transport error, a status other than 200, or an answer not allowed or without the claimed port; distinctPorts counts the ports the answers gave; the clients, the servers and the fake share the machine's cores",
    agentEnvironment: "GLIBC_TUNABLES=glibc.malloc.hugetlb=1, as daemonset/Dockerfile sets it",
    reconcile: "leases written by hostport-bench-leasegen with a forwarding record (network, snat on, one pod address each) and the pod netns identity, so hostport-agent installs and reconciles their forwards; agent in the node netns with --table-repair-interval 1 and --log-level info (each restored lease logs table.restored); startupPass: the table.reconciled event of the first pass, which runs as the socket starts to serve and installs every lease into an empty table; kernelDump: hostport-bench-set-dump, the dumps of ports and snatpods a compare reads, nothing compared; steadyPass: periodic passes that repaired nothing, polled on /metrics: passMs the ones that compared the table with every lease (hostport_reconcile_last_compare_duration_seconds; the benchmark commits to a table of its own in the node netns between samples, so the generation moves and the next pass compares), unchangedMs the ones that found the nf_tables generation where the last compare left it and compared nothing (hostport_reconcile_last_duration_seconds); flush: nft flush map ip hostport ports in the node netns, then the sampled host ports probed from the node netns (connect to 192.0.2.1:port, read the pod's byte; 1 ms between sweeps) from the moment nft exits: lastPortMs when all sampled ports answer again, passSeenMs when the repairing pass's table.reconciled line appeared (every lease back)",
    reconcileSizes: $reconcileSizes, reconcilePassSamples: $passSamples,
    reconcileFlushRounds: $flushRounds, reconcileProbedPorts: $reconcileProbes,
    recovery: "leases written by hostport-bench-leasegen through hostport_agent_store (snapshot: one compacted snapshot; journal: one grant record each); hostport-agent started in a private netns, ready = first 200 from GET /readyz, polled every 1 ms; RSS read 500 ms after ready"
  },
  execFloorMs: {
    true: ([$floor[] | select(.program == "/bin/true") | .wallMs] | first),
    hostportVersion: ([$floor[] | select(.program | endswith("/hostport")) | .wallMs] | first),
    portmapVersion: ([$floor[] | select(.program | endswith("/portmap")) | .wallMs] | first)
  },
  cold: ([$cold[] | .kind] | unique | map(. as $k | {key: (if $k == "hostport-agent" then "hostportAgent" else $k end),
    value: ([$cold[] | select(.kind == $k)] | {addMs: (map(.addMs) | summary), delMs: (map(.delMs) | summary)})}) | from_entries),
  churn: $churn,
  cni: {hostport: rows($hostport), portmap: rows($portmap), hostportAgent: rows($agentPlugin),
        portmapStoppedAt: (fin($portmap).stoppedAt // null),
        portmapStopReason: (fin($portmap).reason // ""),
        failures: [($hostport, $portmap, $agentPlugin)[] | select(.failed != null)
          | {plugin, after: (.plugin as $p | [($hostport, $portmap, $agentPlugin)[]
              | select(.plugin == $p and .n != null) | .n] | max), failed}]},
  agentLoad: [$load[] | select(.clients != null)],
  stateDirFdatasyncMs: ([$load[] | select(.fdatasyncMs != null) | .fdatasyncMs] | first),
  claims: {runs: $claims},
  admission: {load: [$admission[] | select(.clients != null)],
              handshakeMs: ([$admission[] | select(.handshakeMs != null) | .handshakeMs] | first)},
  recovery: {leases: $leases, empty: $recEmpty, snapshot: $recSnapshot, journal: $recJournal,
             stateDirKiB: {snapshot: $kibSnapshot, journal: $kibJournal}},
  reconcile: [$reconcile[] | . + {flushSummary: {
    nftMs: ([.flush[].nftMs] | spread),
    firstPortMs: ([.flush[].firstPortMs] | spread),
    lastPortMs: ([.flush[].lastPortMs] | spread),
    passSeenMs: ([.flush[].passSeenMs] | spread),
    passDurationMs: ([.flush[].passDurationMs] | spread),
    leasesRestored: ([.flush[].leasesRestored] | spread)}}]
}
| .targets = (
    . as $r
    | ($r.execFloorMs.true) as $floor
    # The worst excess over the process-start floor of one plugin's figure at every N.
    | def overFloor($key; $verb; $q):
        if $floor == null or ($r.cni[$key] | length) == 0 then null else
          [$r.cni[$key][] | select(.[$verb][$q] != null)
           | {n, value: (.[$verb][$q] - $floor[$q]), ms: .[$verb][$q]}] | worst end;
      def floorTarget($key; $title; $verb; $q):
        overFloor($key; $verb; $q) as $w
        | {target: "\($title) \($verb | ascii_upcase) \($q), every N", goal: "≤ /bin/true \($q) + 1 ms",
           value: $w.value, unit: "ms over the floor", at: $w.n, absolute: $w.ms,
           met: (if $w == null then null else $w.value <= 1 end)};
      # The worst p50 over the floor of one plugin's bursts, at every N and burst size.
      def burstTarget($key; $title; $verb):
        (if $floor == null then null else
          [$r.cni[$key][] | .n as $n | (.burst // [])[] | select(.[$verb].p50 != null)
           | {n: $n, size, value: (.[$verb].p50 - $floor.p50), ms: .[$verb].p50}] | worst end) as $w
        | {target: "\($title) \($verb | ascii_upcase) p50 in a burst, every N and burst size",
           goal: "≤ /bin/true p50 + 1 ms", value: $w.value, unit: "ms over the floor",
           at: (if $w == null then null else "\($w.n), burst of \($w.size)" end), absolute: $w.ms,
           met: (if $w == null then null else $w.value <= 1 end)};
      # The worst change against N = 0 of a figure (worse: larger of `sign` * change).
      def vsZero($rows; f; $sign):
        ($rows | map(select(f != null))) as $d
        | if ($d | length) < 2 or ($d[0].n != 0) then null else
            ($d[0] | f) as $base
            | [$d[1:][] | {n, value: ((f / $base - 1) * $sign)}] | worst end;
      ($r.cni.hostport | map(select(.datapath != null))) as $dp
      | ($r.reconcile // [] | map(select(.n == 65535)) | first) as $rec65k
      | ($r.churn.churn.windows // []) as $win
      | [
      floorTarget("hostport"; "hostport standalone"; "add"; "p50"),
      floorTarget("hostport"; "hostport standalone"; "add"; "p99"),
      floorTarget("hostport"; "hostport standalone"; "del"; "p50"),
      floorTarget("hostport"; "hostport standalone"; "del"; "p99"),
      floorTarget("hostportAgent"; "hostport + agent"; "add"; "p50"),
      floorTarget("hostportAgent"; "hostport + agent"; "add"; "p99"),
      floorTarget("hostportAgent"; "hostport + agent"; "del"; "p50"),
      floorTarget("hostportAgent"; "hostport + agent"; "del"; "p99"),
      burstTarget("hostport"; "hostport standalone"; "del"),
      burstTarget("hostport"; "hostport standalone"; "add"),
      burstTarget("hostportAgent"; "hostport + agent"; "del"),
      burstTarget("hostportAgent"; "hostport + agent"; "add"),
      (vsZero($dp; .datapath.ratioToDirect; -1) as $w
        | {target: "new TCP connections/s via hostPort (relative to direct), every N vs N = 0", goal: "within 5%",
           value: (if $w == null then null else -$w.value * 100 end), unit: "%, worst N", at: $w.n,
           met: (if $w == null then null else $w.value <= 0.05 end)}),
      (vsZero($dp; .datapath.udp.ratioToDirect; 1) as $w
        | {target: "UDP first-packet p50 via hostPort (relative to direct), every N vs N = 0", goal: "within 5%",
           value: (if $w == null then null else $w.value * 100 end), unit: "%, worst N", at: $w.n,
           met: (if $w == null then null else $w.value <= 0.05 end)}),
      (vsZero($dp; (if .datapath.udp == null then null else .datapath.udp.p99RatioToDirect // (.datapath.udp.p99Ms / .datapath.udp.directP99Ms) end); 1) as $w
        | {target: "UDP first-packet p99 via hostPort (relative to direct), every N vs N = 0", goal: "within 5%",
           value: (if $w == null then null else $w.value * 100 end), unit: "%, worst N", at: $w.n,
           met: (if $w == null then null else $w.value <= 0.05 end)}),
      ($rec65k.steadyPass.passMs.p50 as $v
        | {target: "full reconcile (a pass that compares kernel and leases), 65535 leases, median", goal: "< 100 ms",
           value: $v, unit: "ms", met: (if $v == null then null else $v < 100 end)}),
      ((if $r.recovery.leases == 65535 then $r.recovery.snapshot.readyMsMedian else null end) as $v
        | {target: "recovery: exec -> /readyz, 65535 leases (snapshot), median", goal: "< 200 ms",
           value: $v, unit: "ms", met: (if $v == null then null else $v < 200 end)}),
      ($rec65k.restart.execToSocketMs as $v
        | {target: "recovery with forwards: restart with the table in place, exec -> socket, 65535 leases", goal: "< 200 ms",
           value: $v, unit: "ms", met: (if $v == null then null else $v < 200 end)}),
      ((if $rec65k.memory == null then null else $rec65k.memory.vmRssKiB / 1024 end) as $v
        | {target: "agent VmRSS, 65535 leases with their forwards written (after the steady passes)", goal: "< 24 MiB",
           value: $v, unit: "MiB", met: (if $v == null then null else $v < 24 end)}),
      ($r.cold.hostport.addMs as $c
        | {target: "first ADD on a fresh node, standalone (lays the table out), p50", goal: "< 20 ms",
           value: $c.p50, unit: "ms", detail: (if $c == null then null else "p99 \($c.p99 * 10 | round / 10) ms, max \($c.max * 10 | round / 10) ms" end),
           met: (if $c == null then null else $c.p50 < 20 end)}),
      ($r.cold.hostportAgent.addMs as $c
        | {target: "first ADD on a fresh node, agent just started, p50", goal: "< 20 ms",
           value: $c.p50, unit: "ms", detail: (if $c == null then null else "p99 \($c.p99 * 10 | round / 10) ms, max \($c.max * 10 | round / 10) ms" end),
           met: (if $c == null then null else $c.p50 < 20 end)}),
      (($win | map(.achievedPairsPerSecond) | min) as $v
        | {target: "churn: \($r.churn.churn.pairsPerSecond // "–") ADD+DEL pairs/s for \($r.churn.churn.seconds // "–") s at N = \($r.churn.n // "–"): slowest window, no failures",
           goal: "≥ 95% of the rate, 0 failures", value: $v, unit: "pairs/s",
           detail: (if $r.churn == null then null else "\([$win[].failures] | add) failures" end),
           met: (if $v == null then null else ($v >= 0.95 * $r.churn.churn.pairsPerSecond and ([$win[].failures] | add) == 0) end)}),
      ([$win[] | select(.addMs.p99 != null and .delMs.p99 != null)]) as $lat
      | (if ($lat | length) < 2 then {target: "churn: latency growth, last window vs first (ADD and DEL p99)", goal: "≤ 1 ms", value: null, met: null}
       else ([($lat | last).addMs.p99 - ($lat | first).addMs.p99, ($lat | last).delMs.p99 - ($lat | first).delMs.p99] | max) as $v
        | {target: "churn: latency growth, last window vs first (ADD and DEL p99)", goal: "≤ 1 ms", value: $v, unit: "ms",
           met: ($v <= 1)} end),
      ([$win[] | select(.vmRssKiB != null)]) as $mem
      | (if ($mem | length) < 2 then {target: "churn: agent VmRSS growth, last window vs first", goal: "≤ 1 MiB", value: null, met: null}
       else ((($mem | last).vmRssKiB - ($mem | first).vmRssKiB) / 1024) as $v
        | {target: "churn: agent VmRSS growth, last window vs first", goal: "≤ 1 MiB", value: $v, unit: "MiB", met: ($v <= 1)} end),
      (if ($win | length) < 1 then {target: "churn: journal bounded by compaction", goal: "≤ 1.25 × compactAfterJournalBytes", value: null, met: null}
       else (($win | map(.journalBytes // 0) | max) / 1048576) as $v
        | {target: "churn: journal bounded by compaction (largest journal seen)", goal: "≤ 1.25 × \($r.churn.compactAfterJournalBytes / 1048576) MiB",
           value: $v, unit: "MiB", detail: "compacted during the run: \(if [range(1; $win | length) as $i | ($win[$i].journalBytes != null and $win[$i - 1].journalBytes != null and $win[$i].journalBytes < $win[$i - 1].journalBytes)] | any then "yes" else "no" end)",
           met: ($v <= 1.25 * $r.churn.compactAfterJournalBytes / 1048576)} end)
    ])
