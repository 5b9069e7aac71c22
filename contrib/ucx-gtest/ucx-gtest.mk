#
# UCX's own gtest suites that accept a transport, built from the source
# package of the installed UCX against the installed libucs/libuct/libucp,
# with every test case instantiated on atomicx (see atomicx_uct_tls.h and
# atomicx_ucp_tls.h). Used by contrib/softroce/ucx-gtest-guest.sh:
#
#   make -f contrib/ucx-gtest/ucx-gtest.mk UCX_SRC=<ucx source tree> O=<build dir>
#
# Only the test sources that apply to a transport with device atomics,
# pending, flush, fence and CONNECT_TO_EP (no put/get/am, no tag offload, no
# events) and UCX's gtest infrastructure are compiled; the UCX libraries are
# the installed ones (their internal symbols the tests use are exported).
#

UCX_SRC  ?= $(error UCX_SRC: the UCX source tree of the installed version)
O        ?= .
UCX_INFO ?= ucx_info
CXX      ?= g++
HERE     := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
GT       := $(UCX_SRC)/test/gtest

# The tests as UCX builds them (-O3 -g in its release flags; -O2 here), but
# without -Werror: this is UCX's code, compiled by whatever g++ is installed.
CXXFLAGS ?= -O2 -g
ALL_CXXFLAGS = $(CXXFLAGS) -std=c++11 -fno-strict-aliasing -pthread -w
CPPFLAGS_UCX = -include $(O)/config.h -DHAVE_CONFIG_H \
               -DTOP_SRCDIR=\"$(UCX_SRC)\" \
               -DGTEST_UCM_HOOK_LIB_DIR=\"/nonexistent\" \
               -I$(O) -I$(UCX_SRC)/src -I$(UCX_SRC)/test -I$(GT)
# libuct_ib (a module UCX loads itself): ucp_test.cc compares an iface's
# flush function with uct_ud_iface_flush to find UD interfaces.
UCX_MODULE_DIR ?= $(shell pkg-config --variable=libdir ucx)/ucx
LDLIBS   = -lucp -luct -lucs -lucm $(UCX_MODULE_DIR)/libuct_ib.so.0 \
           -Wl,-rpath,$(UCX_MODULE_DIR) -lpthread -ldl -lm -lrt

# Google Test as UCX bundles it (its headers are what the tests include).
GTEST_SRCS = gtest.cc gtest-death-test.cc gtest-filepath.cc gtest-matchers.cc \
             gtest-port.cc gtest-printers.cc gtest-test-part.cc \
             gtest-typed-test.cc
COMMON_SRCS = common/main.cc common/test.cc common/test_helpers.cc \
              common/mem_buffer.cc common/test_watchdog.cc
UCT_SRCS = uct/uct_test.cc uct/uct_p2p_test.cc \
           uct/test_amo.cc uct/test_amo_add_xor.cc uct/test_amo_and_or.cc \
           uct/test_amo_cswap.cc uct/test_amo_fadd_fxor.cc \
           uct/test_amo_fand_for.cc uct/test_amo_swap.cc \
           uct/test_flush.cc uct/test_fence.cc uct/test_pending.cc \
           uct/test_uct_ep.cc uct/test_peer_failure.cc uct/test_progress.cc \
           uct/v2/test_uct_query.cc
UCP_SRCS = ucp/ucp_test.cc ucp/test_ucp_memheap.cc ucp/test_ucp_atomic.cc

OBJS = $(addprefix $(O)/obj/gtest/,$(GTEST_SRCS:.cc=.o)) \
       $(addprefix $(O)/obj/,$(COMMON_SRCS:.cc=.o)) \
       $(addprefix $(O)/obj/,$(UCT_SRCS:.cc=.o)) \
       $(addprefix $(O)/obj/,$(UCP_SRCS:.cc=.o))

all: $(O)/ucx-gtest

$(O)/ucx-gtest: $(OBJS)
	$(CXX) $(ALL_CXXFLAGS) -o $@ $(OBJS) $(LDLIBS)

# UCX's headers need UCX's own build configuration: the installed build's.
$(O)/config.h:
	@mkdir -p $(O)
	{ echo "/* Generated from '$(UCX_INFO) -b': the installed UCX build */"; \
	  echo "#ifndef _GNU_SOURCE"; echo "#define _GNU_SOURCE 1"; echo "#endif"; \
	  $(UCX_INFO) -b || exit 1; } > $@.tmp && mv $@.tmp $@

$(O)/obj/gtest/%.o: $(GT)/common/googletest/%.cc $(O)/config.h $(HERE)/ucx-gtest.mk
	@mkdir -p $(dir $@)
	$(CXX) $(ALL_CXXFLAGS) $(CPPFLAGS_UCX) -I$(GT)/common/googletest -c -o $@ $<

$(O)/obj/common/%.o: $(GT)/common/%.cc $(O)/config.h $(HERE)/ucx-gtest.mk
	@mkdir -p $(dir $@)
	$(CXX) $(ALL_CXXFLAGS) $(CPPFLAGS_UCX) -c -o $@ $<

$(O)/obj/uct/%.o: $(GT)/uct/%.cc $(O)/config.h $(HERE)/ucx-gtest.mk \
                   $(HERE)/atomicx_uct_tls.h
	@mkdir -p $(dir $@)
	$(CXX) $(ALL_CXXFLAGS) $(CPPFLAGS_UCX) -include $(HERE)/atomicx_uct_tls.h -c -o $@ $<

$(O)/obj/ucp/%.o: $(GT)/ucp/%.cc $(O)/config.h $(HERE)/ucx-gtest.mk \
                   $(HERE)/atomicx_ucp_tls.h
	@mkdir -p $(dir $@)
	$(CXX) $(ALL_CXXFLAGS) $(CPPFLAGS_UCX) -include $(HERE)/atomicx_ucp_tls.h -c -o $@ $<

.PHONY: all
