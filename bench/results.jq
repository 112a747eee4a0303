# Assembles docs/benchmarks.json from one run's raw measurements (scripts/bench.sh passes them
# with --arg/--argjson; run with `jq -n -f bench/results.jq ...`):
#   strings  $date $mode $kernel $cpu $memory $loadStart $loadEnd $commit $dirty ("yes"/"no")
#            $pluginsVersion $iptables $nft $sizes $reconcileSizes
#   numbers  $cores $seconds $samples $portmapSamples $bulk $tcpSeconds $tcpRounds $leases
#            $kibSnapshot $kibJournal (null when the recovery section did not run)
#            $passSamples $flushRounds $reconcileProbes
#   arrays   $hostport $portmap $agentPlugin (hostport-bench-cni lines, one per size, then a
#            {"done": true} line), $load (hostport-bench-agent-load), $floor (--exec-floor)
#   objects  $recEmpty $recSnapshot $recJournal (hostport-bench-agent-startup, or null)
#   array    $reconcile (one object per size from bench.sh's reconcile_size)

def rows($x): [$x[] | select(.done != true) | del(.addSamplesMs, .delSamplesMs)];
def fin($x): ([$x[] | select(.done == true)] | first);
# min, median (nearest rank) and max of numbers; null for none.
def spread: sort | if length == 0 then null
  else {n: length, min: first, median: .[(length - 1) / 2 | floor], max: last} end;
{
  date: $date, mode: $mode, seconds: $seconds,
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
    agent: "hostport-agent in its own netns, state dir on the root filesystem (fdatasync on), hostport-bench-agent-load through AgentClient (one connection per call); a round trip is allocate (1 dynamic TCP port) then release",
    agentEnvironment: "GLIBC_TUNABLES=glibc.malloc.hugetlb=1, as daemonset/Dockerfile sets it",
    reconcile: "leases written by hostport-bench-leasegen with a forwarding record (network, snat on, one pod address each) and the pod netns identity, so hostport-agent installs and reconciles their forwards; agent in the node netns with --table-repair-interval 1 and --log-level info (each restored lease logs table.restored); startupPass: the table.reconciled event of the pass before the socket serves, which installs every lease into an empty table; steadyPass: periodic passes that repaired nothing, polled on /metrics: passMs the ones that compared the table with every lease (hostport_reconcile_last_compare_duration_seconds; the benchmark commits to a table of its own in the node netns between samples, so the generation moves and the next pass compares), unchangedMs the ones that found the nf_tables generation where the last compare left it and compared nothing (hostport_reconcile_last_duration_seconds); flush: nft flush map ip hostport ports in the node netns, then the sampled host ports probed from the node netns (connect to 192.0.2.1:port, read the pod's byte; 1 ms between sweeps) from the moment nft exits: lastPortMs when all sampled ports answer again, passSeenMs when the repairing pass's table.reconciled line appeared (every lease back)",
    reconcileSizes: $reconcileSizes, reconcilePassSamples: $passSamples,
    reconcileFlushRounds: $flushRounds, reconcileProbedPorts: $reconcileProbes,
    recovery: "leases written by hostport-bench-leasegen through hostport_agent_store (snapshot: one compacted snapshot; journal: one grant record each); hostport-agent started in a private netns, ready = first 200 from GET /readyz, polled every 1 ms; RSS read 500 ms after ready"
  },
  execFloorMs: {
    true: ([$floor[] | select(.program == "/bin/true") | .wallMs] | first),
    hostportVersion: ([$floor[] | select(.program | endswith("/hostport")) | .wallMs] | first),
    portmapVersion: ([$floor[] | select(.program | endswith("/portmap")) | .wallMs] | first)
  },
  cni: {hostport: rows($hostport), portmap: rows($portmap), hostportAgent: rows($agentPlugin),
        portmapStoppedAt: (fin($portmap).stoppedAt // null),
        portmapStopReason: (fin($portmap).reason // "")},
  agentLoad: [$load[] | select(.clients != null)],
  stateDirFdatasyncMs: ([$load[] | select(.fdatasyncMs != null) | .fdatasyncMs] | first),
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
    | {
      hostportAddP50Max: ([$r.cni.hostport[].add.p50] | max),
      hostportAddP50AtoMost3ms: (([$r.cni.hostport[].add.p50] | max) as $m | if $m == null then null else $m <= 3 end),
      datapathRatioLargestNToN0: (
        ($r.cni.hostport | map(select(.datapath != null))) as $d
        | if ($d | length) < 2 then null else
            (($d | last).datapath.ratioToDirect) / (($d | first).datapath.ratioToDirect) end),
      agent32ClientsPerSecond: ([$r.agentLoad[] | select(.clients == 32) | .allocationsPerSecond] | first),
      recovery50kMs: ($r.recovery.snapshot.recoveredMsMedian // null),
      rss50kMiB: (if $r.recovery.snapshot == null then null else ($r.recovery.snapshot.vmRssKiBMedian / 1024) end),
      reconcilePass50kMsMedian: ([$r.reconcile[] | select(.n == 50000) | .steadyPass.passMs.p50] | first),
      reconcileUnchangedPass50kMsMedian: ([$r.reconcile[] | select(.n == 50000) | .steadyPass.unchangedMs.p50] | first),
      flushRestored5kMsMedian: ([$r.reconcile[] | select(.n == 5000) | .flushSummary.passSeenMs.median] | first)
    })
