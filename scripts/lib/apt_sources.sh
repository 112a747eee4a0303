# shellcheck shell=bash
# The machine's apt sources, which mmdebstrap is given so that a rootfs comes from the mirror and
# keyring this machine already reaches (scripts/build-image.sh, scripts/fresh-machine-check.sh).
# Sourced, not run; the sourcing script defines die().

# sources_file: prints the first deb822 file of /etc/apt/sources.list.d, else sources.list.
sources_file() {
  local file
  for file in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list; do
    if [[ -f "$file" ]]; then
      printf '%s\n' "$file"
      return 0
    fi
  done
  die "no apt sources found (/etc/apt/sources.list.d/*.sources or /etc/apt/sources.list)"
}
