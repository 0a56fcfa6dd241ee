#!/bin/bash
# sample every envoy process's cpu ticks (utime+stime) every 0.5 s: t pid ticks rss_kB
out=$1
while true; do
  for p in $(pgrep -x envoy); do
    read -r -a f < /proc/$p/stat 2>/dev/null || continue
    echo "$(date +%s.%N) $p $((f[13]+f[14])) $(awk '/VmRSS/{print $2}' /proc/$p/status 2>/dev/null)"
  done >> $out
  sleep 0.5
done
