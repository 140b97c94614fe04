/* member_resources.c: the member's resources (partitions and keys) as rows
 * of one table (m->res, common/baton_resource.h), each one's state m->st[row]
 * and the one setter of that state (mb_st_set, member_state.h). */
#include "member_int.h"

#include "baton_log.h"
#include "baton_util.h"

#include <stdlib.h>
#include <string.h>

/* "partition=3" or "key=nightly", for log lines (one per line: the buffer
 * is the handle's). */
const char *mb_row_label(baton_membership_t *m, size_t row) {
    return baton_res_label(baton_res_at(&m->res, row), m->label, sizeof(m->label));
}

/* Moves row to state `to` for reason why (one word, logged). Every change
 * of a resource's state goes through here and is logged at debug
 * (event=member_state). A transition the table does not expect
 * (mstate_transition_ok) is also logged at warn, with from and to, and made
 * all the same: the callers go on as they did when the states were flags,
 * so a surprise shows in the log and never crashes the member. */
void mb_st_set(baton_membership_t *m, size_t row, mstate_t to, const char *why) {
    mpart_t *mp = &m->st[row];
    mstate_t from = mp->state;
    if (from == to)
        return;
    if (!(m->claim_ahead ? mstate_transition_ok_ahead(from, to) : mstate_transition_ok(from, to)))
        BLOG_WARN("event=member_state_unexpected %s from=%s to=%s reason=%s", mb_row_label(m, row),
                  mstate_name(from), mstate_name(to), baton_log_v(why));
    BLOG_DEBUG("event=member_state %s from=%s to=%s reason=%s", mb_row_label(m, row),
               mstate_name(from), mstate_name(to), baton_log_v(why));
    mp->state = to;
    if (to != MSTATE_IDLE && !mp->inbusy)
        mb_busy_list(m, row);
}

/* Appends row to a list of rows (*v, *n, room for *cap). */
static void rows_push(size_t **v, size_t *n, size_t *cap, size_t row) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *v = xrealloc(*v, sizeof(size_t) * *cap);
    }
    (*v)[(*n)++] = row;
}

/* Adds row to the busy list (mb_st_set). */
void mb_busy_list(baton_membership_t *m, size_t row) {
    rows_push(&m->busy_rows, &m->nbusy, &m->busycap, row);
    m->st[row].inbusy = 1;
}

/* Drops the rows gone idle from the busy list. */
void mb_busy_compact(baton_membership_t *m) {
    size_t k = 0;
    for (size_t i = 0; i < m->nbusy; i++) {
        size_t row = m->busy_rows[i];
        if (m->st[row].state == MSTATE_IDLE)
            m->st[row].inbusy = 0;
        else
            m->busy_rows[k++] = row;
    }
    m->nbusy = k;
}
/* The claim's phase changes, the assignment stays; and the reverse. */
void mb_st_phase(baton_membership_t *m, size_t row, mphase_t phase, const char *why) {
    mb_st_set(m, row, mstate_make(mstate_assigned(m->st[row].state), phase), why);
}
void mb_st_assign(baton_membership_t *m, size_t row, int assigned, const char *why) {
    mpart_t *mp = &m->st[row];
    /* A claim we hold already (made ahead of time, standby.claim=ahead):
     * the handoff metric counts from now, not from its creation. */
    if (m->claim_ahead && assigned && !mstate_assigned(mp->state) && mstate_claimed(mp->state))
        mp->claimed_ms = baton_now_ms();
    mb_st_set(m, row, mstate_make(assigned, mstate_phase(mp->state)), why);
}

/* Room in m->st for every row of the table, the new ones zeroed. A big
 * step (the first, or the partitions growing) takes fresh zeroed memory:
 * its pages stay unmapped until a row is written, and a member holds ~100
 * of 100,000 partitions. A small one (a key added) extends in place. */
static void st_fit(baton_membership_t *m) {
    if (m->res.n <= m->stcap)
        return;
    size_t cap = m->res.n + 8;
    if (cap > 2 * m->stcap) {
        mpart_t *st = xcalloc(cap, sizeof(mpart_t));
        if (m->stcap)
            memcpy(st, m->st, sizeof(mpart_t) * m->stcap);
        free(m->st);
        m->st = st;
    } else {
        m->st = xrealloc(m->st, sizeof(mpart_t) * cap);
        memset(m->st + m->stcap, 0, sizeof(mpart_t) * (cap - m->stcap));
    }
    m->stcap = cap;
}

/* Adds row to the dirty list (mb_mark_dirty). */
void mb_dirty_list(baton_membership_t *m, size_t row) {
    rows_push(&m->dirty_rows, &m->ndirty, &m->dirtycap, row);
    m->st[row].listed = 1;
}

/* The row of key name (added, with a zeroed state, if it is new). */
size_t mb_key_row(baton_membership_t *m, const char *name) {
    size_t row = baton_res_table_add_key(&m->res, name);
    st_fit(m);
    return row;
}

int mb_cb_acquired(baton_membership_t *m, size_t row, int64_t epoch) {
    return m->cbs.on_acquired ? m->cbs.on_acquired(m->cbs.opaque, baton_res_at(&m->res, row), epoch)
                              : BATON_OK;
}
void mb_cb_released(baton_membership_t *m, size_t row, baton_release_reason_t why) {
    if (m->cbs.on_released)
        m->cbs.on_released(m->cbs.opaque, baton_res_at(&m->res, row), why);
}

/* A key's row after the partitions grew by delta rows. */
static size_t row_moved(size_t row, size_t old_np, size_t delta) {
    return row >= old_np ? row + delta : row;
}

/* The table grows to nparts partitions: it is rebuilt with the keys in the
 * same order after the new partitions, and every state and row we keep
 * (m->st, the rows noted for on_assigned, the standby lists) moves with
 * its key. */
int mb_grow_parts(baton_membership_t *m, int32_t nparts) {
    if (nparts <= m->res.npartitions)
        return 0;
    size_t old_np = (size_t)m->res.npartitions, old_n = m->res.n;
    size_t delta = (size_t)nparts - old_np;
    baton_res_table_t t;
    baton_res_table_init(&t, m->base, nparts);
    for (size_t row = old_np; row < old_n; row++)
        baton_res_table_add_key(&t, baton_res_at(&m->res, row)->key);
    baton_res_table_free(&m->res);
    m->res = t;
    size_t old_cap = m->stcap;
    st_fit(m);
    memmove(m->st + old_np + delta, m->st + old_np, sizeof(mpart_t) * (old_n - old_np));
    /* The new partitions' rows: past the old capacity they are zero already
     * (st_fit); below it, where the keys were, they are cleared. */
    size_t stale = old_cap > old_np ? old_cap - old_np : 0;
    memset(m->st + old_np, 0, sizeof(mpart_t) * (stale < delta ? stale : delta));
    for (size_t i = 0; i < m->nadded; i++)
        m->added[i] = row_moved(m->added[i], old_np, delta);
    for (size_t i = 0; i < m->ndirty; i++)
        m->dirty_rows[i] = row_moved(m->dirty_rows[i], old_np, delta);
    for (size_t i = 0; i < m->nbusy; i++)
        m->busy_rows[i] = row_moved(m->busy_rows[i], old_np, delta);
    for (size_t i = 0; i < m->nlater; i++)
        m->later[i].row = row_moved(m->later[i].row, old_np, delta);
    for (size_t i = 0; i < m->nstandby; i++)
        for (size_t j = 0; j < m->standby[i].n; j++)
            m->standby[i].rows[j] = row_moved(m->standby[i].rows[j], old_np, delta);
    for (size_t i = 0; i < m->notice.nsubs; i++) /* the order stays: sorted still */
        for (size_t j = 0; j < m->notice.subs[i].nrows; j++)
            m->notice.subs[i].rows[j] = row_moved(m->notice.subs[i].rows[j], old_np, delta);
    return 1;
}
