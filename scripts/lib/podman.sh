# shellcheck shell=bash
# podman on a private root, as tests/e2e/podman_test.sh and tests/image/image_test.sh both run
# it, in one place: nothing under /etc/containers or the machine's storage is used or changed.
# Sourced, not run. The facts behind the settings are in docs/design.md ("Facts about this
# machine"): podman 4.3 here runs containers only with runc, and without default ulimits.

PODMAN=()

# podman_private_root WORK CNI_BIN_DIR CNI_CONF_DIR
# Writes containers.conf, storage.conf and an empty registries.conf into WORK, exports the
# CONTAINERS_* variables naming them, and sets PODMAN to a podman command on WORK's root (vfs
# storage, cgroupfs, file events, a 120 s timeout per call) with the CNI backend reading its
# networks from CNI_CONF_DIR and its plugins from CNI_BIN_DIR, then /usr/lib/cni.
podman_private_root() {
  local work="$1" cniBin="$2" cniConf="$3"
  mkdir -p "$work"/{root,runroot,tmp}
  cat >"$work/containers.conf" <<CONF
[containers]
default_ulimits = []

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$work/events.log"
tmp_dir = "$work/tmp"
lock_type = "file"

[network]
network_backend = "cni"
cni_plugin_dirs = ["$cniBin", "/usr/lib/cni"]
network_config_dir = "$cniConf"
CONF
  cat >"$work/storage.conf" <<CONF
[storage]
driver = "vfs"
graphroot = "$work/root"
runroot = "$work/runroot"
CONF
  : >"$work/registries.conf"
  export CONTAINERS_CONF="$work/containers.conf"
  export CONTAINERS_STORAGE_CONF="$work/storage.conf"
  export CONTAINERS_REGISTRIES_CONF="$work/registries.conf"
  PODMAN=(timeout 120 podman --root "$work/root" --runroot "$work/runroot"
    --storage-driver vfs --tmpdir "$work/tmp" --network-config-dir "$cniConf"
    --cgroup-manager cgroupfs --events-backend file)
}

# Runs podman on the private root.
podman_() { "${PODMAN[@]}" "$@"; }

# podman_import_busybox WORK IMAGE PAGE
# Imports IMAGE: a rootfs of busybox-static and its applets, whose /www/index.html holds PAGE
# (for `httpd -f -p 80 -h /www`). Fails as podman import does.
podman_import_busybox() {
  local work="$1" image="$2" page="$3" rootfs="$1/busybox-rootfs" applet
  mkdir -p "$rootfs"/{bin,proc,sys,dev,etc,tmp,www}
  cp /bin/busybox "$rootfs/bin/busybox"
  while read -r applet; do
    [[ "$applet" == "busybox" ]] || ln -s busybox "$rootfs/bin/$applet"
  done < <(/bin/busybox --list)
  printf '%s\n' "$page" >"$rootfs/www/index.html"
  tar -C "$rootfs" -cf "$work/busybox.tar" .
  podman_ import --quiet "$work/busybox.tar" "$image" >/dev/null
}

# podman_unmount_under WORK: what podman left mounted below WORK, deepest first.
podman_unmount_under() {
  local mnt
  while read -r mnt; do
    umount -l "$mnt"
  done < <(awk -v w="$1" 'index($2, w) == 1 {print $2}' /proc/self/mounts | sort -r)
}

# http_body URL: prints the body of GET URL, retrying while the server starts (at most 20 s).
http_body() {
  local url="$1" deadline=$((SECONDS + 20)) body
  until body="$(curl -fsS --max-time 2 "$url" 2>/dev/null)"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
  printf '%s' "$body"
}
