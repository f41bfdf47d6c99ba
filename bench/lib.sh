# Helpers for bench/*.sh.
# measure N CMD...: runs CMD N times (its stdout dropped), prints the median wall time and the largest
# peak RSS as "median_s=... peak_rss_mib=... runs=N". Fails if CMD fails.
measure() {
  local n=$1; shift
  local tf; tf=$(mktemp)
  local times=() rss=0
  for _ in $(seq "$n"); do
    /usr/bin/time -f '%e %M' -o "$tf" "$@" >/dev/null
    read -r t r < "$tf"
    times+=("$t"); [ "$r" -gt "$rss" ] && rss=$r
  done
  rm -f "$tf"
  local median; median=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  echo "median_s=$median peak_rss_mib=$((rss / 1024)) runs=$n"
}
