/* member_assign.c: reading our assignment node (partitions, keys, what we
 * stand by for) into each resource's state, and telling on_assigned what
 * is newly ours. */
#include "member_int.h"

#include "baton_layout.h"
#include "baton_log.h"
#include "baton_util.h"

#include <stdlib.h>
#include <string.h>

/* Notes row as newly assigned, for on_assigned. */
void mb_assigned_note(baton_membership_t *m, size_t row) {
    if (!m->cbs.on_assigned)
        return;
    if (m->nadded == m->addedcap) {
        m->addedcap = m->addedcap ? m->addedcap * 2 : 16;
        m->added = xrealloc(m->added, sizeof(*m->added) * m->addedcap);
    }
    m->added[m->nadded++] = row;
}

/* Tells on_assigned what was noted and is still assigned and not owned. */
void mb_assigned_flush(baton_membership_t *m) {
    if (m->nadded == 0)
        return;
    baton_resource_t *rs = xmalloc(sizeof(*rs) * m->nadded);
    size_t n = 0;
    for (size_t i = 0; i < m->nadded; i++) {
        const mpart_t *mp = &m->st[m->added[i]];
        if (mstate_assigned(mp->state) && !mstate_owned(mp->state))
            rs[n++] = *baton_res_at(&m->res, m->added[i]);
    }
    m->nadded = 0;
    if (n)
        m->cbs.on_assigned(m->cbs.opaque, rs, n);
    free(rs);
}

/* Whether a resource the assignment lists (listed) or not stays assigned:
 * one we took as a standby stays ours until an assignment newer than the
 * one we promoted on decides (the coordinator's publish after the
 * departure), or until it lists it (then it is simply ours). */
static int promoted_keep(mpart_t *mp, int listed, int64_t generation) {
    if (!mp->promoted)
        return listed;
    if (listed || generation > mp->promoted_gen) {
        mp->promoted = 0;
        return listed;
    }
    return 1;
}

/* Row's assignment as the node says (listed), a standby's promotion
 * kept (promoted_keep). */
static void assign_row(baton_membership_t *m, size_t row, int listed, int64_t generation) {
    mpart_t *mp = &m->st[row];
    int want = promoted_keep(mp, listed, generation);
    if (want != mstate_assigned(mp->state)) {
        mb_st_assign(m, row, want, "assignment");
        mb_mark_dirty(m, mp);
        if (want && !mstate_owned(mp->state))
            mb_assigned_note(m, row);
    }
}

/* Reads assignment/<id> (leaving a watch) and marks changed partitions;
 * notes the newly assigned ones for on_assigned. */
int mb_read_assignment(baton_membership_t *m) {
    char *path = baton_layout_assignment_of(m->base, m->conf.id);
    char *data = NULL;
    size_t len = 0;
    baton_worker_assignment_t wa = {0};
    int err = baton_zk_get(m->zk, path, 1, &data, &len, NULL);
    if (err == BATON_NOTFOUND) {
        /* Not assigned yet: watch for the node's creation. */
        err = baton_zk_exists(m->zk, path, 1, NULL);
        if (err == BATON_OK) {
            err = BATON_CONNECTION; /* created meanwhile: read again */
            goto out;
        }
        if (err != BATON_NOTFOUND)
            goto out;
        err = BATON_OK;
    } else if (err != BATON_OK) {
        goto out;
    } else {
        char why[256];
        if (baton_worker_assignment_decode(data, len, &wa, why, sizeof(why)) != BATON_OK) {
            /* Keep what we own: the coordinator rewrites a bad node, and the
             * sink fences whatever we keep too long. */
            BLOG_ERROR("event=corrupt_znode path=%s error=\"%s\" action=keep_current",
                       baton_log_v(path), baton_log_q(why));
            err = BATON_OK;
            goto out;
        }
    }
    /* Every row listed is ours (a key we never heard of gets its row);
     * every row we know and is not, is not. */
    for (size_t i = 0; i < wa.nkeys; i++)
        mb_key_row(m, wa.keys[i]);
    char *listed = xcalloc(m->res.n + 1, 1);
    for (size_t i = 0; i < wa.npartitions; i++)
        if (wa.partitions[i] >= 0 && wa.partitions[i] < m->res.npartitions)
            listed[wa.partitions[i]] = 1;
    for (size_t i = 0; i < wa.nkeys; i++)
        listed[baton_res_table_find_key(&m->res, wa.keys[i], strlen(wa.keys[i]))] = 1;
    /* The rows listed, then those we hold (an idle row not listed stays as
     * it is; a row seen twice is unchanged the second time). */
    for (size_t i = 0; i < wa.npartitions; i++)
        if (wa.partitions[i] >= 0 && wa.partitions[i] < m->res.npartitions)
            assign_row(m, (size_t)wa.partitions[i], 1, wa.generation);
    for (size_t i = 0; i < wa.nkeys; i++)
        assign_row(m, (size_t)baton_res_table_find_key(&m->res, wa.keys[i], strlen(wa.keys[i])), 1,
                   wa.generation);
    mb_busy_compact(m);
    for (size_t i = 0, n = m->nbusy; i < n; i++) /* rows added meanwhile were listed */
        assign_row(m, m->busy_rows[i], listed[m->busy_rows[i]], wa.generation);
    free(listed);
    for (size_t i = 0; i < wa.npartitions; i++)
        if (wa.partitions[i] >= m->res.npartitions)
            BLOG_WARN("event=assignment_out_of_range partition=%d partitions=%d", wa.partitions[i],
                      m->res.npartitions);
    if (wa.generation != m->generation)
        BLOG_INFO("event=assignment generation=%lld partitions=%zu keys=%zu standby_for=%zu",
                  (long long)wa.generation, wa.npartitions, wa.nkeys, wa.nstandby);
    m->generation = wa.generation;
    mb_standby_update(m, &wa);
out:
    baton_worker_assignment_release(&wa);
    free(data);
    free(path);
    return err;
}
