#!/bin/sh
#
# The generated code of two builds of libfiatomic, function by function:
# disassembles libfiatomic.so of each (objdump -d), drops what moves when
# code moves (addresses, raw bytes, the displacements of rip-relative
# operands and the addresses of call and jump targets, whose symbols are
# kept; a rip-relative operand inside a data object reads as <data>: the
# string literals of log lines move, __FILE__ names the file's folder and
# a __func__ is numbered in its file's order; the line number a log line
# passes to ucs_log_dispatch reads as <line>)
# and compares each function present in both.
#
#   contrib/fastpath-compare.sh OLD_BUILD NEW_BUILD [FUNCTION...]
#
# OLD_BUILD and NEW_BUILD are build trees (src/fiatomic/.libs/libfiatomic.so
# in each) or the libraries themselves. With FUNCTIONS, those must be the
# same instruction for instruction (exit 1 otherwise, with their diff);
# without, the default list is the plain calls' fast path, from the public
# call through the native strategy to ucp_atomic_op_nbx and back to the
# user's callback. Every function is listed as same / differs / only in one.
set -u

[ $# -ge 2 ] || { sed -n '3,17p' "$0" >&2; exit 2; }

lib() {
    if [ -f "$1" ]; then
        echo "$1"
    else
        echo "$1/src/fiatomic/.libs/libfiatomic.so"
    fi
}
old=$(lib "$1")
new=$(lib "$2")
shift 2
for l in "$old" "$new"; do
    [ -f "$l" ] || { echo "fastpath-compare: no $l" >&2; exit 2; }
done
command -v objdump >/dev/null ||
    { echo "fastpath-compare: objdump not found" >&2; exit 2; }

if [ $# -eq 0 ]; then
    # public entry -> post -> selector cache -> native start -> UCP, and
    # UCP's callback -> element done -> request and endpoint completion.
    # Not listed: fiatomic_ep_start, which takes a strategy's table from
    # the context (core/fiatomic_strategy.h) where it called the selector's
    # fiatomic_strategy_ops(): the layers' one change on that path.
    set -- \
        fiatomic_atomic_nbx fiatomic_atomic_nbx_general \
        fiatomic_atomic_nbx_slow fiatomic_atomicmsg_nbx fiatomic_atomicv_nbx \
        fiatomic_fetch_atomic_nbx fiatomic_fetch_atomic_nbx_general \
        fiatomic_fetch_atomic_nbx_slow fiatomic_fetch_atomicmsg_nbx \
        fiatomic_fetch_atomicv_nbx \
        fiatomic_compare_atomic_nbx fiatomic_compare_atomic_nbx_general \
        fiatomic_compare_atomic_nbx_slow fiatomic_compare_atomicmsg_nbx \
        fiatomic_compare_atomicv_nbx fiatomic_inject_atomic fiatomic_call_req \
        fiatomic_post fiatomic_post_checked fiatomic_post_one \
        fiatomic_post_wide.isra.0 fiatomic_req_post \
        fiatomic_select fiatomic_select_for_key fiatomic_select_call \
        fiatomic_native_start fiatomic_native_post_cb fiatomic_native_fetch_cb \
        fiatomic_native_finish fiatomic_native_usable fiatomic_ucp_amo \
        fiatomic_elem_done fiatomic_ep_req_done fiatomic_req_complete \
        fiatomic_req_alloc fiatomic_req_get fiatomic_req_put \
        fiatomic_req_release_link fiatomic_req_uncount \
        fiatomic_request_check_status fiatomic_request_free
fi

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

# One file per function, normalised.
split() {
    mkdir -p "$2"
    objdump -d --no-show-raw-insn "$1" | awk -v dir="$2" '
        function flush(i) {
            for (i = 1; i <= n; i++)
                print buf[i] > out
            n = 0
            line_arg = 0
        }
        /^[0-9a-f]+ <[^>]+>:$/ {
            flush()
            name = $2
            gsub(/[<>:]/, "", name)
            out = dir "/" name
            next
        }
        /^$/ { flush(); out = ""; next }
        out != "" && /^ *[0-9a-f]+:/ {
            sub(/^ *[0-9a-f]+:[ \t]*/, "")
            # rip-relative: the displacement and the resolved address; an
            # address inside an object (a string literal is named after
            # the symbol before it: __FILE__ names the folder) is data
            gsub(/-?0x[0-9a-f]+\(%rip\)/, "X(%rip)")
            sub(/#[ \t]*[0-9a-f]+ </, "# <")
            sub(/# <[^>]*\+0x[0-9a-f]+>/, "# <data>")
            # a function'"'"'s __func__ is numbered in the order of its file
            sub(/# <__func__\.[0-9]+>/, "# <__func__>")
            # alignment padding
            if ($0 ~ /^(nop|xchg +%ax,%ax|cs nopw|data16)/)
                next
            # call/jump targets: keep the symbol, drop the address
            gsub(/[ \t][0-9a-f]+ </, " <")
            buf[++n] = $0
            # a log line'"'"'s __LINE__ (the second argument of
            # ucs_log_dispatch) moves with the code around it
            if ($0 ~ /^mov +\$0x[0-9a-f]+,%esi$/) {
                line_arg = n
            } else if ($0 ~ /^(call|jmp) /) {
                if ((line_arg > 0) && ($0 ~ /<ucs_log_dispatch@plt>/))
                    sub(/\$0x[0-9a-f]+/, "$<line>", buf[line_arg])
                line_arg = 0
            }
        }
        END { flush() }'
}
split "$old" "$tmp/old"
split "$new" "$tmp/new"

fail=0
for f in "$@"; do
    if [ ! -f "$tmp/old/$f" ] || [ ! -f "$tmp/new/$f" ]; then
        echo "fastpath-compare: $f: not in both builds (inlined or renamed)"
        fail=1
    elif cmp -s "$tmp/old/$f" "$tmp/new/$f"; then
        echo "fastpath-compare: $f: same ($(wc -l < "$tmp/new/$f")" \
             "instructions)"
    else
        echo "fastpath-compare: $f: DIFFERS"
        diff -u "$tmp/old/$f" "$tmp/new/$f" | sed -n "3,42p"
        fail=1
    fi
done

# All the others, summed up.
same=0 differ="" only=""
for p in "$tmp/old"/* "$tmp/new"/*; do
    f=${p##*/}
    case " $differ $only " in *" $f "*) continue ;; esac
    if [ ! -f "$tmp/old/$f" ] || [ ! -f "$tmp/new/$f" ]; then
        only="$only $f"
    elif [ "$p" = "$tmp/old/$f" ]; then
        if cmp -s "$tmp/old/$f" "$tmp/new/$f"; then
            same=$((same + 1))
        else
            differ="$differ $f"
        fi
    fi
done
echo "fastpath-compare: whole library: $same functions the same;" \
     "differ:${differ:- none}; in one build only:${only:- none}"
[ $fail -eq 0 ] && echo "fastpath-compare: the listed functions are the" \
    "same instruction for instruction"
exit $fail
