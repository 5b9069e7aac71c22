#!/bin/bash
# Run a script inside a qemu (TCG) guest that has a soft-RoCE device, rxe0.
#
# The host has no RDMA hardware and no InfiniBand in its kernel, so we boot
# Debian's own kernel under qemu, load rdma_rxe on a dummy netdev, and run the
# script there with the host's root file system visible read-only over
# virtio-9p (the project's build included). See docs/atomicx.md, "Tests".
#
# Usage: run-in-guest.sh <script> [args...]   (see usage() below)
set -euo pipefail

me=run-in-guest
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
self="$here/$(basename "${BASH_SOURCE[0]}")"

usage() {
    cat >&2 <<EOF
usage: $0 <script> [args...]

Boots Debian's linux-image-6.1 under qemu (TCG) with soft-RoCE device rxe0
on dummy0, and runs <script> [args...] in it as root, chrooted into the
host's root file system (read-only, over virtio-9p), in the same working
directory. Exits with the script's exit code.

In the guest: /tmp and /var/tmp are writable (changes are discarded), and
\$ATOMICX_GUEST_OUT is a read-write share of a host directory for results
(the guest's kernel log is saved there as guest-dmesg.log).
The guest script gets UCX_*, FIATOMIC_*, GTEST_*, ATOMICX_* and CI from the
caller's environment, and ATOMICX_GUEST=1.

Environment:
  ATOMICX_GUEST_OUT        host directory shared read-write with the guest
                           (default: a fresh temporary directory)
  ATOMICX_SOFTROCE_TIMEOUT seconds before the guest is killed (default 1800)
  ATOMICX_SOFTROCE_CACHE   kernel + initramfs cache
                           (default /var/cache/atomicx-softroce)
  ATOMICX_GUEST_SMP        virtual CPUs (default 2)
  ATOMICX_GUEST_ID         a name for this guest when several share one
                           output directory: hostname atomicx-guest-ID,
                           kernel log guest-dmesg-ID.log (letters, digits)

A network between guests (default: none; rxe0 sits on dummy0 at
192.0.2.1 and nothing leaves the guest). Both variables together give the
guest a virtio-net NIC, eth0, and put rxe0 on it instead:
  ATOMICX_GUEST_NETDEV     the NIC's qemu -netdev backend without its id,
                           e.g. dgram,local.type=inet,local.host=127.0.0.1,
                           local.port=P1,remote.type=inet,
                           remote.host=127.0.0.1,remote.port=P2
                           (contrib/softroce/two-guests.sh connects two
                           guests so)
  ATOMICX_GUEST_ADDR       eth0's IPv4 address/prefix, e.g. 10.77.0.1/24;
                           the MAC address is derived from it
EOF
    exit 2
}

die() { echo "$me: error: $*" >&2; exit 1; }
say() { echo "$me: $*" >&2; }

[ $# -ge 1 ] || usage
case $1 in -h | --help) usage ;; esac
script=$(realpath -e -- "$1" 2>/dev/null) || die "no such script: $1"
[ -f "$script" ] || die "not a file: $script"
shift

timeout_s=${ATOMICX_SOFTROCE_TIMEOUT:-1800}
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || die "ATOMICX_SOFTROCE_TIMEOUT must be a number of seconds, not '$timeout_s'"
smp=${ATOMICX_GUEST_SMP:-2}
guest_id=${ATOMICX_GUEST_ID:-}
[[ $guest_id =~ ^[a-zA-Z0-9]*$ ]] || die "ATOMICX_GUEST_ID must be letters and digits, not '$guest_id'"

[[ $smp =~ ^[1-8]$ ]] || die "ATOMICX_GUEST_SMP must be 1 to 8, not '$smp'"
netdev=${ATOMICX_GUEST_NETDEV:-}
netaddr=${ATOMICX_GUEST_ADDR:-}
nic=(-nic none)
if [ -n "$netdev$netaddr" ]; then
    [ -n "$netdev" ] && [ -n "$netaddr" ] ||
        die "ATOMICX_GUEST_NETDEV and ATOMICX_GUEST_ADDR go together"
    [[ $netaddr =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})/([0-9]{1,2})$ ]] ||
        die "ATOMICX_GUEST_ADDR must be an IPv4 address/prefix, not '$netaddr'"
    [[ $netdev != *id=* ]] || die "ATOMICX_GUEST_NETDEV must not name an id"
    # One MAC per address: guests on one segment must not share qemu's default.
    mac=$(printf '52:54:00:%02x:%02x:%02x' "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}" "${BASH_REMATCH[4]}")
    nic=(-nic none -netdev "$netdev,id=atomicx_net" -device "virtio-net-pci,netdev=atomicx_net,mac=$mac")
fi

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
apt_get() {
    # Wait for other apt/dpkg users (other sessions install concurrently).
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 "$@"
}

# --- 1. Packages: install what packages.txt lists and is missing. ---------
ensure_packages() {
    local p missing=()
    while read -r p; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done < <(grep -v '^[[:space:]]*#' "$here/packages.txt" | tr -s ' \t' '\n' | grep .)
    [ ${#missing[@]} -eq 0 ] && return
    say "installing ${missing[*]}"
    apt_get update -qq
    apt_get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
ensure_packages
busybox=/bin/busybox   # from busybox-static: the initramfs needs a static one

# --- 2. Kernel and initramfs, cached per kernel package and per version of
#        this script (which generates the guest /init). ----------------------
# The current kernel ABI package, e.g. linux-image-6.1.0-56-amd64, is what the
# linux-image-amd64 meta package depends on.
resolve_kernel() {
    kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
        awk '$1 == "Depends:" && $2 ~ /^linux-image-6\.1\./ { print $2; exit }')
    [ -n "$kpkg" ] && kpkgver=$(apt-cache policy "$kpkg" | awk '/Candidate:/ { print $2 }')
    [ -n "$kpkg" ] && [ -n "$kpkgver" ] && [ "$kpkgver" != "(none)" ]
}
if ! resolve_kernel; then
    apt_get update -qq   # no package lists yet
    resolve_kernel || die "cannot find the linux-image-6.1.*-amd64 package that linux-image-amd64 depends on"
fi
kver=${kpkg#linux-image-}

cache=${ATOMICX_SOFTROCE_CACHE:-/var/cache/atomicx-softroce}
if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
    [ -z "${ATOMICX_SOFTROCE_CACHE:-}" ] || die "cache directory $cache is not writable"
    cache=${XDG_CACHE_HOME:-$HOME/.cache}/atomicx-softroce   # not root
    mkdir -p "$cache"
fi
selfhash=$(sha256sum "$self" | cut -c1-12)
set_entry() { entry="$cache/linux-$kpkgver-$selfhash"; }
set_entry

build_tmp=
job=
qpid=
streampid=
# shellcheck disable=SC2317  # (called from the traps below)
cleanup() {
    # Never leave qemu behind: killing timeout(1) forwards the signal to qemu.
    if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
        kill "$qpid" 2>/dev/null || true
        wait "$qpid" 2>/dev/null || true
    fi
    if [ -n "$streampid" ]; then
        wait "$streampid" 2>/dev/null || true
    fi
    [ -z "$build_tmp" ] || rm -rf "$build_tmp"
    [ -z "$job" ] || rm -rf "$job"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The guest's PID 1 (busybox sh). Everything it needs from the host is in the
# job share: the output directory's path, the run marker, and run.sh.
write_init() {
    cat <<'INIT'
#!/bin/busybox sh
# PID 1 of the atomicx soft-RoCE guest, generated by run-in-guest.sh.
/bin/busybox mount -t devtmpfs dev /dev
# The initramfs has no /dev/console node, so the kernel gave us no stdio.
exec </dev/console >/dev/console 2>&1
/bin/busybox --install -s /bin
# /bin for busybox, the rest for chroot'ed host tools (ip, rdma).
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys

# A failed setup prints why and powers off without the exit marker, which
# the host reports as a failure.
die() {
    echo "atomicx-guest: setup failed: $*"
    dmesg | tail -n 40
    sync
    poweroff -f
}
# virtio devices may probe a moment after their driver loads: retry.
mount_9p() { # tag dir options
    n=0
    until mount -t 9p -o "trans=virtio,version=9p2000.L,msize=262144,$3" "$1" "$2" 2>/dev/null; do
        n=$((n + 1))
        [ $n -lt 50 ] || return 1
        sleep 0.1
    done
}

while read -r m; do
    insmod "/lib/modules/$m.ko" || die "cannot load module $m"
done </lib/modules/load-order

mkdir -p /job /newroot /rw
mount_9p atomicx_job /job ro || die "cannot mount the job share"
read -r out </job/out
read -r marker </job/marker
name=
[ ! -f /job/id ] || read -r name </job/id

# The host root, read-only; cache=loose because nothing writes to it here.
R=/newroot
mount_9p hostroot $R ro,cache=loose || die "cannot mount the host root"
mount -t proc proc $R/proc
mount -t sysfs sys $R/sys
mount -t devtmpfs dev $R/dev
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts devpts $R/dev/pts
mount -t tmpfs -o mode=1777 shm $R/dev/shm
mount -t tmpfs -o mode=755 run $R/run
# /tmp and /var/tmp: the host's files stay visible (a checkout or script may
# live there) and writes go to guest memory.
mount -t tmpfs rw /rw
for d in tmp var/tmp; do
    mkdir -p /rw/$d/upper /rw/$d/work
    chmod 1777 /rw/$d/upper
    mount -t overlay overlay -o "lowerdir=$R/$d,upperdir=/rw/$d/upper,workdir=/rw/$d/work" $R/$d ||
        mount -t tmpfs -o mode=1777 tmp $R/$d || die "cannot mount /$d"
done
mkdir -p "$R$out" 2>/dev/null
mount_9p atomicx_out "$R$out" rw || die "cannot mount the output share at $out"
mkdir -p $R/run/atomicx-job
mount --bind /job $R/run/atomicx-job

# soft-RoCE: rxe0 on dummy0 (created by the dummy module). The IPv4 address
# (documentation range; nothing leaves the guest) gives rxe0 a RoCE v2 GID
# that UCX and perftest can use. With a NIC (the job's netaddr file), rxe0
# sits on eth0 with the address given, reachable from the other guests.
hostname atomicx-guest${name:+-$name}
chroot $R ip link set lo up || die "cannot bring up lo"
netif=dummy0
addr=192.0.2.1/24
if [ -f /job/netaddr ]; then
    read -r addr </job/netaddr
    netif=eth0
    n=0
    until [ -e /sys/class/net/eth0 ]; do
        n=$((n + 1))
        [ $n -lt 100 ] || die "no eth0 (virtio-net)"
        sleep 0.1
    done
fi
chroot $R ip link set $netif up || die "cannot bring up $netif"
chroot $R ip addr add $addr dev $netif || die "cannot address $netif"
chroot $R rdma link add rxe0 type rxe netdev $netif || die "cannot create rxe0"
n=0
until cat /sys/class/infiniband/rxe0/ports/1/gids/[0-7] 2>/dev/null | grep -q ':ffff:'; do
    n=$((n + 1))
    [ $n -lt 100 ] || die "rxe0 got no IPv4 GID"
    sleep 0.1
done

chroot $R /usr/bin/env -i /bin/bash /run/atomicx-job/run.sh </dev/null
rc=$?
dmesg >"$R$out/guest-dmesg${name:+-$name}.log" 2>/dev/null
sync
echo "@@ATOMICX_GUEST_EXIT $marker rc=$rc@@"
poweroff -f
INIT
}

# Module closure from modules.dep, in load order (dependencies first).
# crc32_generic is not in modules.dep: rdma_rxe asks the crypto API for
# "crc32" at device creation, and there is no modprobe to load it on demand.
# overlay is for the guest's /tmp.
# virtio_net is for the optional NIC.
module_roots=(virtio_pci 9pnet_virtio 9p overlay dummy virtio_net rdma_rxe ib_uverbs crc32_generic)
module_closure() { # moddir
    local moddir=$1 line mod name d
    declare -gA modpath=() moddeps=() builtin=() seen=()
    load_order=()
    while read -r line; do
        mod=${line%%:*}
        name=${mod##*/}
        name=${name%%.ko*}
        name=${name//-/_}
        modpath[$name]=$mod
        moddeps[$name]=${line#*:}
    done <"$moddir/modules.dep"
    while read -r mod; do
        name=${mod##*/}
        name=${name%%.ko*}
        builtin[${name//-/_}]=1
    done <"$moddir/modules.builtin"
    visit() {
        local n=$1 d
        [ -z "${seen[$n]:-}" ] || return 0
        seen[$n]=1
        if [ -z "${modpath[$n]:-}" ]; then
            [ -n "${builtin[$n]:-}" ] || die "kernel module $n not found in $kver"
            return 0
        fi
        for d in ${moddeps[$n]}; do
            d=${d##*/}
            d=${d%%.ko*}
            visit "${d//-/_}"
        done
        load_order+=("$n")
    }
    for d in "${module_roots[@]}"; do visit "${d//-/_}"; done
}

build_entry() {
    build_tmp=$(mktemp -d "$cache/.build.XXXXXX")
    local t=$build_tmp moddir n
    say "building the guest kernel and initramfs for $kpkg $kpkgver"
    # apt's download sandbox user cannot write into a private temp dir.
    if ! (cd "$t" && apt-get -qq -o APT::Sandbox::User=root download "$kpkg=$kpkgver"); then
        say "apt-get download failed; refreshing the package lists and retrying"
        apt_get update -qq
        resolve_kernel || die "cannot find the current linux-image-6.1.*-amd64 package"
        kver=${kpkg#linux-image-}
        set_entry
        (cd "$t" && apt-get -qq -o APT::Sandbox::User=root download "$kpkg=$kpkgver") ||
            die "cannot download $kpkg=$kpkgver"
    fi
    dpkg-deb -x "$t"/"$kpkg"_*.deb "$t/kernel"
    rm -f "$t"/*.deb
    moddir="$t/kernel/lib/modules/$kver"
    "$busybox" depmod -b "$t/kernel" "$kver"
    module_closure "$moddir"

    mkdir -p "$t/initramfs"/{bin,dev,proc,sys,lib/modules}
    cp "$busybox" "$t/initramfs/bin/busybox"
    for n in "${load_order[@]}"; do
        cp "$moddir/${modpath[$n]}" "$t/initramfs/lib/modules/$n.ko"
        echo "$n" >>"$t/initramfs/lib/modules/load-order"
    done
    write_init >"$t/initramfs/init"
    chmod 755 "$t/initramfs/init"
    (cd "$t/initramfs" && find . | "$busybox" cpio -o -H newc 2>/dev/null | gzip -1) >"$t/initrd.img"

    mkdir "$t/entry"
    mv "$t/initrd.img" "$t/entry/"
    mv "$t/kernel/boot/vmlinuz-$kver" "$t/entry/vmlinuz"
    printf '%s\n' "${load_order[@]}" >"$t/entry/modules"
    rm -rf "$entry"
    mv "$t/entry" "$entry"   # atomic: a half-built entry is never used
    rm -rf "$t"
    build_tmp=
}

# One build at a time per cache (other sessions may run this concurrently).
exec {lockfd}>"$cache/.lock"
flock "$lockfd"
if [ ! -f "$entry/initrd.img" ] || [ ! -f "$entry/vmlinuz" ]; then
    build_entry
    # Drop entries of older kernels or script versions unused for an hour.
    find "$cache" -mindepth 1 -maxdepth 1 -name 'linux-*' ! -path "$entry" -mmin +60 -exec rm -rf {} + || true
fi
touch "$entry"
exec {lockfd}>&-

# --- 3. The job: output share, marker, and the script's command line. -----
if [ -n "${ATOMICX_GUEST_OUT:-}" ]; then
    mkdir -p "$ATOMICX_GUEST_OUT"
    out=$(realpath -e "$ATOMICX_GUEST_OUT")
else
    out=$(mktemp -d "${TMPDIR:-/tmp}/atomicx-guest-out.XXXXXX")
    say "guest output directory: $out"
fi
job=$(mktemp -d "${TMPDIR:-/tmp}/atomicx-guest-job.XXXXXX")
marker=$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$out" >"$job/out"
echo "$marker" >"$job/marker"
[ -z "$netaddr" ] || echo "$netaddr" >"$job/netaddr"
[ -z "$guest_id" ] || echo "$guest_id" >"$job/id"
{
    echo "# generated by $me"
    echo "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    echo "export HOME=/root LANG=C.UTF-8 TERM=dumb ATOMICX_GUEST=1"
    while read -r name; do
        case $name in
            UCX_* | FIATOMIC_* | GTEST_* | ATOMICX_* | CI) printf 'export %s=%q\n' "$name" "${!name}" ;;
        esac
    done < <(compgen -e)
    printf 'export ATOMICX_GUEST_OUT=%q\n' "$out"
    printf 'cd %q || { echo "%s: cannot cd to %q in the guest" >&2; exit 125; }\n' "$PWD" "$me" "$PWD"
    # A script without the execute bit is run with bash.
    if [ -x "$script" ]; then printf 'exec'; else printf 'exec /bin/bash'; fi
    printf ' %q' "$script" "$@"
    echo
} >"$job/run.sh"

# --- 4. Boot. -------------------------------------------------------------
# quiet + loglevel=3: the console shows the script's output and kernel errors
# only; the whole kernel log is saved to $out/guest-dmesg.log. panic=-1 with
# -no-reboot turns a guest panic into a qemu exit instead of a hang.
# stdin is /dev/null so qemu never touches a terminal (CI has none).
# -display none -serial stdio rather than -nographic: with -nographic SeaBIOS
# also prints to the serial port, with escape codes that clear the terminal.
console="$job/console.log"
: >"$console"   # before tail(1) looks for it: qemu's redirection may come later
start=$(date +%s)
timeout --kill-after=10 "$timeout_s" \
    qemu-system-x86_64 -accel tcg,thread=multi -cpu max -m 2048 -smp "$smp" \
    -display none -serial stdio -no-reboot "${nic[@]}" \
    -kernel "$entry/vmlinuz" -initrd "$entry/initrd.img" \
    -append "console=ttyS0 quiet loglevel=3 panic=-1" \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
    -virtfs "local,path=${job//,/,,},mount_tag=atomicx_job,security_model=none,readonly=on" \
    -virtfs "local,path=${out//,/,,},mount_tag=atomicx_out,security_model=none" \
    </dev/null >"$console" 2>&1 &
qpid=$!
# Stream the console as it comes (serial lines end in \r\n).
tail -n +1 -f --pid="$qpid" "$console" | sed -u 's/\r$//' &
streampid=$!
qrc=0
wait "$qpid" || qrc=$?
qpid=
wait "$streampid" || true
streampid=
elapsed=$(($(date +%s) - start))

rc=$(tr -d '\r' <"$console" | sed -n "s/.*@@ATOMICX_GUEST_EXIT $marker rc=\([0-9]*\)@@.*/\1/p" | tail -n 1)
if [ -n "$rc" ]; then
    say "guest script exited with $rc (${elapsed}s in qemu)"
    exit "$rc"
fi
if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
    die "the guest did not finish within ${timeout_s}s (ATOMICX_SOFTROCE_TIMEOUT); qemu was killed"
fi
[ "$qrc" -eq 0 ] || die "qemu failed with exit code $qrc (its messages are above)"
die "the guest stopped without reporting an exit code: its setup failed or its kernel crashed (see the console output above and $out/guest-dmesg.log if present)"
