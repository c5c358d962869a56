# SPDX-License-Identifier: GPL-2.0
# Memory pressure for the guest tests (faults.sh, rescuer.sh); sourced.

# available_mb: MemAvailable, in MiB
available_mb() {
	awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo
}

# reclaimed: pages the guest has scanned for reclaim since it booted
reclaimed() {
	awk '/^pgscan_(kswapd|direct) / { n += $2 } END { print n + 0 }' /proc/vmstat
}

# tmpfs_hog_start DIR LEFT_MB: fill all but LEFT_MB of what is available
# with a file on a tmpfs mounted at DIR; the guest has no swap, so it
# stays.  fallocate: tmpfs allocates the pages itself, where dd took
# minutes of the emulated guest to copy them in.
tmpfs_hog_start() {
	local dir=$1 left=$2 avail
	avail=$(available_mb)
	[ "$avail" -gt $((2 * left)) ] ||
		{ echo "only $avail MiB available, not enough to leave $left" >&2; return 1; }
	mkdir -p "$dir" && mount -t tmpfs -o size="$avail"M tmpfs "$dir" || return
	fallocate -l $((avail - left))M "$dir/hog" || { umount "$dir"; return 1; }
	echo "hog: $((avail - left)) MiB of $avail MiB available; now $(available_mb) MiB"
}

# tmpfs_hog_stop DIR: free the hog of DIR, if there is one
tmpfs_hog_stop() {
	grep -q " $1 " /proc/mounts || return 0
	rm -f "$1/hog" && umount "$1"
}
