/**
 * CAS-loop strategy: every cell of 1..8-byte elements, through UCP's own
 * compare-and-swap, so it stays in UCP's atomicity domain (CPU or device)
 * and is atomic with respect to the native strategy and to plain UCP atomics.
 *
 * Elements of 1 and 2 bytes live inside their aligned 32-bit word: the loop
 * swaps the whole word, and only the element's bits differ between the
 * expected and the new word, so a neighbour's concurrent update makes the
 * CAS fail and retry instead of being overwritten. x86-64 is little endian:
 * the element at byte offset k of the word is at bit 8k.
 *
 * The first CAS expects the last value this endpoint saw in that word (0 if
 * none): when right, the operation takes one round trip; when wrong, the
 * failed CAS returned the current value at the cost of a plain read. A
 * guess is remembered per word address *and* width: an 8-byte word and the
 * 4-byte word at the same address are different words.
 * New values are always combined from the snapshot the CAS compares
 * against, never from a re-read; the retry compares bits, the user-visible
 * predicate (inside the combine function) compares values.
 *
 * Contention: an element whose CAS failed twice (the second one compared
 * against the value the first one had just read) goes to the target for
 * execution where that is atomic with UCP's atomics on the word (software
 * atomics, the target's CPU: fiatomic_select_contention_target). It has not
 * taken effect yet, so it takes effect exactly once, at the target. One
 * round trip then replaces a number of failed ones that grows with the
 * number of contenders. The word is then known contended: the next
 * FIATOMIC_CAS_CONTENDED_CALLS elements on it go to the target at once (one
 * round trip each, what the automatic choice gives such cells anyway), then
 * the loop tries its CAS again, so a word whose contention ended is back to
 * the CAS after that many elements.
 */
#include "core/fiatomic_strategy.h"

#include <string.h>

static bool fiatomic_cas_supports(const fiatomic_cell_t *cell)
{
    return cell->size <= 8; /* UCP has no wider compare-and-swap */
}

/* Always in UCP's own atomicity domain: usable wherever UCP reaches the
 * memory and has its compare-and-swap (fiatomic_ucx_compat.c). */
static bool fiatomic_cas_usable(const fiatomic_ep_h ep,
                                const fiatomic_rkey_t *key,
                                const fiatomic_cell_t *cell, uint64_t flags)
{
    return fiatomic_cas_supports(cell) && (key->rkey != NULL) &&
           !key->no_ucp_amo &&
           !fiatomic_ucx_amo_broken(ep, UCP_ATOMIC_OP_CSWAP, true);
}

static bool fiatomic_cas_needs_target_progress(const fiatomic_rkey_t *key)
{
    return key->sw_amo;
}

static uint64_t fiatomic_cas_word_mask(const fiatomic_elem_t *elem)
{
    return (elem->word_size == 8) ? UINT64_MAX : UINT32_MAX;
}

static uint64_t fiatomic_cas_elem_mask(const fiatomic_elem_t *elem)
{
    size_t size = elem->req->cell->size;

    return (size == 8) ? UINT64_MAX : ((UINT64_C(1) << (size * 8)) - 1);
}

static uint64_t fiatomic_cas_extract(const fiatomic_elem_t *elem,
                                     uint64_t word)
{
    return (word >> elem->shift) & fiatomic_cas_elem_mask(elem);
}

/* The word with the element replaced by the op applied to it. */
static uint64_t fiatomic_cas_apply(const fiatomic_elem_t *elem, uint64_t word)
{
    fiatomic_req_t *req = elem->req;
    uint64_t emask      = fiatomic_cas_elem_mask(elem) << elem->shift;
    uint64_t bits       = fiatomic_cas_extract(elem, word);
    uint8_t value[8];

    memcpy(value, &bits, sizeof(value));
    req->cell->combine(value, elem->operand, elem->compare);
    bits = 0;
    memcpy(&bits, value, req->cell->size);
    return ((word & ~emask) | (bits << elem->shift)) &
           fiatomic_cas_word_mask(elem);
}

/* The element took effect with `old` as the word it replaced. */
static unsigned fiatomic_cas_guess_slot(const fiatomic_elem_t *elem)
{
    return (unsigned)((elem->word_addr >> 2) ^ elem->word_size) %
           FIATOMIC_GUESS_SLOTS;
}

static void fiatomic_cas_remember(fiatomic_elem_t *elem, uint64_t word)
{
    fiatomic_ep_h ep = elem->req->ep;
    unsigned slot    = fiatomic_cas_guess_slot(elem);

    if ((ep->cas.guess[slot].word_addr != elem->word_addr) ||
        (ep->cas.guess[slot].word_size != elem->word_size)) {
        ep->cas.guess[slot].contended = 0; /* another word's */
    }
    ep->cas.guess[slot].word_addr = elem->word_addr;
    ep->cas.guess[slot].word_size = elem->word_size;
    ep->cas.guess[slot].value     = word & fiatomic_cas_word_mask(elem);
}

/* The element took effect with `old` as the word it replaced by new_word. */
static void fiatomic_cas_finish(fiatomic_elem_t *elem, uint64_t old,
                                uint64_t new_word)
{
    uint64_t bits = fiatomic_cas_extract(elem, old);

    fiatomic_cas_remember(elem, new_word);
    if (elem->result != NULL) {
        memcpy(elem->result, &bits, elem->req->cell->size);
    }
    fiatomic_elem_done(elem, UCS_OK);
}

static void fiatomic_cas_cb(void *request, ucs_status_t status,
                            void *user_data);

/* Failed CASes after which an element goes to the target (when it can) */
#define FIATOMIC_CAS_HANDOFF_FAILURES 2
/* Elements on a word that go to the target at once after a hand-off */
#define FIATOMIC_CAS_CONTENDED_CALLS  64

static unsigned fiatomic_cas_guess_slot(const fiatomic_elem_t *elem);

static void fiatomic_cas_handoff(fiatomic_elem_t *elem)
{
    fiatomic_req_t *req = elem->req;

    ++req->ep->cas.handoffs;
    elem->strategy = FIATOMIC_STRATEGY_TARGET;
    fiatomic_target_ops.start(req, (size_t)(elem - req->elems), 1);
}

/* A CAS of the element failed: true when the element was handed to the
 * target-side strategy (it completes there), false to try again here. */
static bool fiatomic_cas_contended(fiatomic_elem_t *elem)
{
    fiatomic_req_t *req = elem->req;
    fiatomic_ep_h ep    = req->ep;

    unsigned slot;

    ++ep->cas.retries;
    if ((++elem->failures < FIATOMIC_CAS_HANDOFF_FAILURES) ||
        !fiatomic_select_contention_target(ep, elem->key, req->cell)) {
        return false;
    }
    slot = fiatomic_cas_guess_slot(elem);
    ep->cas.guess[slot].word_addr = elem->word_addr;
    ep->cas.guess[slot].word_size = elem->word_size;
    ep->cas.guess[slot].value     = elem->expected;
    ep->cas.guess[slot].contended = FIATOMIC_CAS_CONTENDED_CALLS;
    fiatomic_cas_handoff(elem);
    return true;
}

/*
 * Issue CAS attempts until one is in flight or the element is done. Called
 * with elem->expected set; elem->observed tells whether it came from the
 * target (then an op that would not change the value completes without a
 * write: the read that observed it is its linearization point).
 */
static void fiatomic_cas_issue(fiatomic_elem_t *elem)
{
    fiatomic_ep_h ep = elem->req->ep;
    uint64_t wmask   = fiatomic_cas_word_mask(elem);
    ucs_status_ptr_t sptr;
    uint64_t new_word;

    for (;;) {
        if (ep->destroyed) {
            fiatomic_elem_done(elem, UCS_ERR_CANCELED);
            return;
        }

        new_word = fiatomic_cas_apply(elem, elem->expected);
        if (elem->observed && (new_word == elem->expected)) {
            fiatomic_cas_finish(elem, elem->expected, new_word);
            return;
        }

        elem->reply = new_word; /* in: the new word; out: the old one */
        ++ep->cas.attempts;
        sptr = fiatomic_ucp_amo(elem, UCP_ATOMIC_OP_CSWAP, &elem->expected,
                                elem->word_size, elem->word_addr, &elem->reply,
                                fiatomic_cas_cb);
        if (UCS_PTR_IS_PTR(sptr)) {
            elem->req->flags |= FIATOMIC_REQ_F_UCP;
            fiatomic_ep_inflight_add(ep);
            return;
        } else if (UCS_PTR_IS_ERR(sptr)) {
            fiatomic_elem_done(elem, UCS_PTR_STATUS(sptr));
            return;
        }

        /* Completed in place: elem->reply holds the old word. */
        if ((elem->reply & wmask) == elem->expected) {
            fiatomic_cas_finish(elem, elem->expected, new_word);
            return;
        }
        elem->expected = elem->reply & wmask;
        elem->observed = true;
        if (fiatomic_cas_contended(elem)) {
            return;
        }
    }
}

static void fiatomic_cas_cb(void *request, ucs_status_t status,
                            void *user_data)
{
    fiatomic_elem_t *elem = user_data;
    fiatomic_h fia        = elem->req->fia;
    fiatomic_ep_h ep;
    uint64_t wmask, old;
    bool locked;

    FIATOMIC_CB_ENTER_SEND(fia, fiatomic_cas_cb, request, status, user_data,
                           locked);
    ep    = elem->req->ep;
    wmask = fiatomic_cas_word_mask(elem);
    old   = elem->reply & wmask;
    ucp_request_free(request);
    if ((status != UCS_OK) ||
        (elem->req->flags & FIATOMIC_REQ_F_ABANDONED)) {
        /* A failed peer ends the loop: no retry on an error; a request
         * reported timed out is not retried, nor its result written. */
        fiatomic_elem_done(elem, status);
    } else if (old == elem->expected) {
        fiatomic_cas_finish(elem, elem->expected,
                            fiatomic_cas_apply(elem, elem->expected));
    } else {
        elem->expected = old;
        elem->observed = true;
        if (!fiatomic_cas_contended(elem)) {
            fiatomic_cas_issue(elem);
        }
    }
    fiatomic_ep_inflight_remove(ep); /* last: may free a destroyed ep */
    fiatomic_leave(fia, locked);
}

static size_t fiatomic_cas_start(fiatomic_req_t *req, size_t first,
                                 size_t count)
{
    fiatomic_elem_t *elem = &req->elems[first];
    fiatomic_ep_h ep      = req->ep;
    size_t size           = req->cell->size;
    unsigned slot;

    /* The aligned word that holds the element: 32 bits for elements of up
     * to 4 bytes, else 64. */
    elem->word_size = (size <= 4) ? 4 : 8;
    elem->word_addr = elem->raddr & ~(uint64_t)(elem->word_size - 1);
    elem->shift     = (unsigned)(elem->raddr - elem->word_addr) * 8;
    elem->observed  = false;
    elem->failures  = 0;

    slot = fiatomic_cas_guess_slot(elem);
    if ((ep->cas.guess[slot].word_addr == elem->word_addr) &&
        (ep->cas.guess[slot].word_size == elem->word_size)) {
        if ((ep->cas.guess[slot].contended > 0) &&
            fiatomic_select_contention_target(ep, elem->key, req->cell)) {
            --ep->cas.guess[slot].contended; /* contended lately: no CAS */
            fiatomic_cas_handoff(elem);
            return 1;
        }
        elem->expected = ep->cas.guess[slot].value;
    } else {
        elem->expected = 0;
    }
    fiatomic_cas_issue(elem);
    return 1;
}

const fiatomic_strategy_ops_t fiatomic_cas_ops = {
    .id                    = FIATOMIC_STRATEGY_CAS,
    .name                  = "cas",
    .supports              = fiatomic_cas_supports,
    .usable                = fiatomic_cas_usable,
    .start                 = fiatomic_cas_start,
    .needs_target_progress = fiatomic_cas_needs_target_progress
};
