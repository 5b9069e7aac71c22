/**
 * atomicx host unit tests: the pieces that need no device.
 *  - CAS-combine of every op on 32-bit halves and 64-bit words, against a
 *    reference that operates on the bytes in memory;
 *  - byte order of fetched values;
 *  - the ABI guard;
 *  - registration by the constructor and clean unregistration on dlclose.
 */

#include "atomicx_test_ref.h"

#include <gtest/gtest.h>

extern "C" {
#include <uct/atomicx/atomicx_amo.h>
#include <uct/atomicx/atomicx_counters.h>
#include <ucs/debug/log_def.h>
#include <ucs/type/class.h>
#include <ucs/config/parser.h>
#include <uct/api/uct.h>
#include <uct/api/version.h>
}

#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <string>
#include <algorithm>
#include <vector>

extern "C" {
/* Exported by libuct: its view of the classes atomicx derives from */
extern ucs_class_t uct_base_iface_t_class;
extern ucs_class_t uct_base_ep_t_class;
}

using namespace atomicx_test;

namespace {

const uct_atomic_op_t all_ops[] = {
    UCT_ATOMIC_OP_ADD, UCT_ATOMIC_OP_AND, UCT_ATOMIC_OP_OR,
    UCT_ATOMIC_OP_XOR, UCT_ATOMIC_OP_SWAP, UCT_ATOMIC_OP_CSWAP
};


const uint32_t values32[] = {0, 1, 2, 0x7fffffff, 0x80000000, 0xfffffffe,
                             0xffffffff, 0x12345678, 0xdeadbeef};
const uint64_t values64[] = {0, 1, 0xffffffff, 0x100000000ull,
                             0x7fffffffffffffffull, 0x8000000000000000ull,
                             0xffffffffffffffffull, 0x0123456789abcdefull};

} // namespace


class atomicx_combine32 : public ::testing::TestWithParam<
        std::tuple<uct_atomic_op_t, unsigned /* byte offset */>> {
};

/* A 32-bit op on either half of an 8-byte word changes exactly that half as
 * the reference says, never the neighbour (no carry, no borrow), and the
 * extracted old value is the half's content */
TEST_P(atomicx_combine32, every_value)
{
    uct_atomic_op_t op = std::get<0>(GetParam());
    unsigned offset    = std::get<1>(GetParam());
    uint64_t word_addr = 0x10000;
    unsigned shift     = uct_atomicx_half_shift(word_addr + offset);
    size_t checked     = 0;

    EXPECT_EQ(word_addr, uct_atomicx_word_addr(word_addr + offset));

    for (uint32_t old : values32) {
        for (uint32_t neighbour : values32) {
            for (uint32_t value : values32) {
                for (uint32_t compare : {old, (uint32_t)(old + 1), value}) {
                    uint8_t mem[8], expected_mem[8];
                    uint64_t word, new_word;
                    uint32_t expected;

                    /* The word as it lies in the target's memory */
                    memcpy(mem + offset, &old, 4);
                    memcpy(mem + (4 - offset), &neighbour, 4);
                    memcpy(&word, mem, 8);

                    ASSERT_EQ(old, (uint32_t)uct_atomicx_word_extract(
                                           word, 4, shift));

                    new_word = uct_atomicx_word_combine(op, 4, shift, word,
                                                        value, compare);

                    expected = reference<uint32_t>(op, old, value, compare);
                    memcpy(expected_mem, mem, 8);
                    memcpy(expected_mem + offset, &expected, 4);
                    ASSERT_EQ(0, memcmp(&new_word, expected_mem, 8))
                            << op_name(op) << " offset " << offset
                            << std::hex << " old 0x" << old
                            << " neighbour 0x" << neighbour << " value 0x"
                            << value << " compare 0x" << compare
                            << " gave 0x" << new_word;
                    ++checked;
                }
            }
        }
    }

    EXPECT_EQ(9u * 9 * 9 * 3, checked);
}

INSTANTIATE_TEST_SUITE_P(
        all, atomicx_combine32,
        ::testing::Combine(::testing::ValuesIn(all_ops),
                           ::testing::Values(0u, 4u)),
        [](const ::testing::TestParamInfo<atomicx_combine32::ParamType> &info) {
            return std::string(op_name(std::get<0>(info.param))) +
                   (std::get<1>(info.param) ? "_high_half" : "_low_half");
        });


class atomicx_combine64 : public ::testing::TestWithParam<uct_atomic_op_t> {
};

TEST_P(atomicx_combine64, every_value)
{
    uct_atomic_op_t op = GetParam();

    for (uint64_t old : values64) {
        for (uint64_t value : values64) {
            for (uint64_t compare : {old, old + 1}) {
                ASSERT_EQ(reference<uint64_t>(op, old, value, compare),
                          uct_atomicx_word_combine(op, 8, 0, old, value,
                                                   compare))
                        << op_name(op) << std::hex << " old 0x" << old
                        << " value 0x" << value;
                ASSERT_EQ(old, uct_atomicx_word_extract(old, 8, 0));
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(
        all, atomicx_combine64, ::testing::ValuesIn(all_ops),
        [](const ::testing::TestParamInfo<uct_atomic_op_t> &info) {
            return std::string(op_name(info.param));
        });


TEST(atomicx_byte_order, reply_conversion)
{
    const uint64_t value = 0x0102030405060708ull;
    uint8_t be[8]        = {1, 2, 3, 4, 5, 6, 7, 8};
    uint64_t be_reply;

    memcpy(&be_reply, be, sizeof(be_reply));
    EXPECT_EQ(value, uct_atomicx_reply_to_host(value, 0));
    EXPECT_EQ(value, uct_atomicx_reply_to_host(be_reply, 1));
    for (uint64_t v : values64) {
        EXPECT_EQ(v, uct_atomicx_reply_to_host(__builtin_bswap64(v), 1));
    }
}


TEST(atomicx_byte_order, half_position)
{
    /* The half at the lower address is the low-order half of a host-order
     * word on little-endian hosts */
    uint64_t word = 0;
    uint32_t low  = 0x11111111, high = 0x22222222;
    uint8_t mem[8];

    memcpy(mem, &low, 4);
    memcpy(mem + 4, &high, 4);
    memcpy(&word, mem, 8);
    EXPECT_EQ(low, (uint32_t)(word >> uct_atomicx_half_shift(0x1000)));
    EXPECT_EQ(high, (uint32_t)(word >> uct_atomicx_half_shift(0x1004)));
}


/* The library under test, loaded and unloaded by the tests themselves */
class atomicx_lib : public ::testing::Test {
protected:
    typedef ucs_status_t (*abi_check_func_t)(size_t, size_t);

    static std::vector<std::string> component_names()
    {
        std::vector<std::string> names;
        uct_component_h *components;
        unsigned i, count;

        EXPECT_EQ(UCS_OK, uct_query_components(&components, &count));
        for (i = 0; i < count; ++i) {
            uct_component_attr_t attr;
            attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
            EXPECT_EQ(UCS_OK, uct_component_query(components[i], &attr));
            names.push_back(attr.name);
        }
        uct_release_component_list(components);
        return names;
    }

    static bool has_atomicx()
    {
        std::vector<std::string> names = component_names();
        return std::find(names.begin(), names.end(), "atomicx") != names.end();
    }

    static ucs_log_func_rc_t
    count_errors(const char *file, unsigned line, const char *function,
                 ucs_log_level_t level,
                 const ucs_log_component_config_t *comp_conf,
                 const char *message, va_list ap)
    {
        if (level == UCS_LOG_LEVEL_ERROR) {
            ++errors;
            return UCS_LOG_FUNC_RC_STOP;
        }
        return UCS_LOG_FUNC_RC_CONTINUE;
    }

    void *open_lib()
    {
        void *handle = dlopen(ATOMICX_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
        EXPECT_NE(nullptr, handle) << dlerror();
        return handle;
    }

    static int errors;
};

int atomicx_lib::errors = 0;


TEST_F(atomicx_lib, abi_guard)
{
    void *handle = open_lib();
    ASSERT_NE(nullptr, handle);
    abi_check_func_t abi_check =
            (abi_check_func_t)dlsym(handle, "uct_atomicx_abi_check");
    ASSERT_NE(nullptr, abi_check);

    size_t iface_size = uct_base_iface_t_class.size;
    size_t ep_size    = uct_base_ep_t_class.size;

    EXPECT_EQ(UCS_OK, abi_check(iface_size, ep_size));

    errors = 0;
    ucs_log_push_handler(count_errors);
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, abi_check(iface_size + 8, ep_size));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, abi_check(iface_size, ep_size - 8));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, abi_check(iface_size - 8, ep_size + 8));
    ucs_log_pop_handler();
    EXPECT_EQ(3, errors) << "each refusal logs one error";

    dlclose(handle);
}


TEST_F(atomicx_lib, register_unregister)
{
    ASSERT_FALSE(has_atomicx()) << "atomicx registered before dlopen";

    for (int round = 0; round < 3; ++round) {
        void *handle = open_lib();
        ASSERT_NE(nullptr, handle);

        uct_atomicx_is_registered_func_t is_registered =
                (uct_atomicx_is_registered_func_t)dlsym(
                        handle, "uct_atomicx_is_registered");
        ASSERT_NE(nullptr, is_registered);
        EXPECT_EQ(1, is_registered());
        EXPECT_TRUE(has_atomicx()) << "round " << round;

        /* The component is usable: its MD resources can be listed (none
         * without an atomics-capable verbs device, which is fine) */
        uct_component_h *components;
        unsigned count;
        ASSERT_EQ(UCS_OK, uct_query_components(&components, &count));
        for (unsigned i = 0; i < count; ++i) {
            uct_component_attr_t attr;
            attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                              UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
            ASSERT_EQ(UCS_OK, uct_component_query(components[i], &attr));
        }
        uct_release_component_list(components);

        ASSERT_EQ(0, dlclose(handle)) << dlerror();
        /* After unload, the list no longer points into unmapped memory */
        EXPECT_FALSE(has_atomicx()) << "round " << round;
    }

    /* The configuration registry is also clean: printing every table
     * would touch an unloaded one */
    FILE *null = fopen("/dev/null", "w");
    ASSERT_NE(nullptr, null);
#if (UCT_VERNO_MAJOR > 1) || (UCT_VERNO_MINOR >= 22)
    ucs_config_parser_print_all_opts(null, "UCX_", UCS_CONFIG_PRINT_CONFIG,
                                     &ucs_config_global_list, NULL);
#else
    ucs_config_parser_print_all_opts(null, "UCX_", UCS_CONFIG_PRINT_CONFIG,
                                     &ucs_config_global_list);
#endif
    fclose(null);
}
