/**
 * ucs_status_t -> -FI_E*: the one place the library converts, at the public
 * boundary.
 */
#include "base/fiatomic_int.h"

static const struct {
    ucs_status_t status;
    int          fi_errno;
} fiatomic_status_table[] = {
    {UCS_OK,                     0},
    {UCS_INPROGRESS,             0},
    {UCS_ERR_NO_MESSAGE,         FI_ENOMSG},
    {UCS_ERR_NO_RESOURCE,        FI_EAGAIN},
    {UCS_ERR_IO_ERROR,           FI_EIO},
    {UCS_ERR_NO_MEMORY,          FI_ENOMEM},
    {UCS_ERR_INVALID_PARAM,      FI_EINVAL},
    {UCS_ERR_UNREACHABLE,        FI_EHOSTUNREACH},
    {UCS_ERR_INVALID_ADDR,       FI_EADDRNOTAVAIL},
    {UCS_ERR_NOT_IMPLEMENTED,    FI_ENOSYS},
    {UCS_ERR_MESSAGE_TRUNCATED,  FI_ETRUNC},
    {UCS_ERR_NO_PROGRESS,        FI_EAGAIN},
    {UCS_ERR_BUFFER_TOO_SMALL,   FI_ETOOSMALL},
    {UCS_ERR_NO_ELEM,            FI_ENOENT},
    {UCS_ERR_SOME_CONNECTS_FAILED, FI_ECONNREFUSED},
    {UCS_ERR_NO_DEVICE,          FI_ENODEV},
    {UCS_ERR_BUSY,               FI_EBUSY},
    {UCS_ERR_CANCELED,           FI_ECANCELED},
    {UCS_ERR_SHMEM_SEGMENT,      FI_EIO},
    {UCS_ERR_ALREADY_EXISTS,     FI_EALREADY},
    {UCS_ERR_OUT_OF_RANGE,       FI_EINVAL},
    {UCS_ERR_TIMED_OUT,          FI_ETIMEDOUT},
    {UCS_ERR_EXCEEDS_LIMIT,      FI_EMSGSIZE},
    {UCS_ERR_UNSUPPORTED,        FI_EOPNOTSUPP},
    /* the memory does not grant the access (and a peer that refused the
     * connection): fi_mr(3)'s refusal of an access not registered */
    {UCS_ERR_REJECTED,           FI_EACCES},
    {UCS_ERR_NOT_CONNECTED,      FI_ENOTCONN},
    {UCS_ERR_CONNECTION_RESET,   FI_ECONNRESET},
    {UCS_ERR_ENDPOINT_TIMEOUT,   FI_ETIMEDOUT}
};

FIATOMIC_API int fiatomic_status_to_fi_errno(ucs_status_t status)
{
    size_t i;

    for (i = 0; i < ucs_static_array_size(fiatomic_status_table); ++i) {
        if (fiatomic_status_table[i].status == status) {
            return -fiatomic_status_table[i].fi_errno;
        }
    }

    return -FI_EOTHER;
}
