/* Group commit of object changes: concurrent PUTs, DELETEs and multipart
 * parts share one LMDB write transaction (local_internal.h, "local_group.c").
 *
 * A leader/follower queue. A caller appends its change; if no group is
 * running it leads one, else it sleeps on its own condition variable until
 * a leader has committed its change (done) or hands it the lead. A leader
 * begins the write transaction (waiting for LMDB's writer lock, during which
 * more changes queue up), then takes the changes at the head of the queue
 * (itself first, at most LOCAL_GROUP_MAX), applies them in order, commits,
 * marks them done and hands the lead to the next queued change before any
 * of them waits for its flush: the next group commits while this one
 * syncs. Each caller then does its own post-commit work (fsync mode: waits
 * for the flush that makes the commit durable, or takes a ticket for it
 * (local_group_durable); dropping replaced files).
 *
 * Fsync mode: while it applies the group, the leader records its writes
 * (local_wr_put, local_wr_del) and, after the commit and before handing the lead on,
 * appends them to the commit log as the group's record (local_wal.h); the group is
 * durable once that record is flushed, one fdatasync shared by every group
 * appended meanwhile. A group that cannot be logged (the log full, out of
 * memory, an I/O error) waits for a sync point instead, as every commit
 * outside the groups does. */
#include <pthread.h>

#include "storage/local/local_internal.h"
#include "storage/local/local_syncer.h"
#include "storage/local/local_wal.h"

enum { CH_QUEUED, CH_LEAD, CH_DONE };

/* Fsync mode: appends the record of the group just committed as txnid to
 * the commit log. Returns what local_wal_flush must reach for the group to be
 * durable, or 0 if it is not logged (its members then wait for a sync
 * point). */
static uint64_t group_log(lstor_t *st, uint64_t txnid)
{
    local_wal_t *w = st->wal;
    uint64_t lsn = 0;
    /* Every commit before this one that is not in the log must be under a
     * restore point before this record can be: a replay starts from the
     * restore point and must not build on a change it does not have. A
     * larger unlogged id is a commit after this one (or one that failed):
     * waiting for all before this one is enough. */
    uint64_t need = atomic_load(&st->unlogged_last);
    if (need >= txnid)
        need = txnid - 1;
    if (need && local_syncer_wait_durable(st->syncer, need) != 0)
        goto unlogged;
    /* The log starts over once a restore point covers all of it; half full,
     * a sync point is asked for, so that it can by the time it is full. */
    if (local_wal_filling(w)) {
        if (local_syncer_durable(st->syncer) >= local_wal_last_txnid(w))
            local_wal_restart(w);
        else
            local_syncer_kick(st->syncer);
    }
    if (local_wal_append(w, txnid, &lsn) == 0)
        return lsn;
unlogged:
    local_unlogged(st, txnid);
    return 0;
}

/* Applies the changes m[0..n) in order in one write transaction and
 * commits it. A change whose apply fails is done with that status; if it
 * had written to the transaction, the transaction starts over without it
 * (each start over drops one change, so at most n). */
static void group_run(lstor_t *st, local_change_t **m, size_t n, MDB_txn *txn)
{
    size_t live = n;
    stor_status_t s = STOR_OK;
    for (size_t i = 0; i < n; i++)
        m[i]->status = STOR_OK;
    for (size_t i = 0; i < n; i++) {
        if (m[i]->status != STOR_OK)
            continue;
        int touched = 0;
        stor_status_t r = m[i]->apply(st, txn, m[i]->arg, &touched);
        if (r == STOR_OK)
            continue;
        m[i]->status = r;
        live--;
        if (!touched)
            continue;
        mdb_txn_abort(txn);
        if ((s = local_wr_begin(st, &txn)) != STOR_OK)
            break;
        if (st->wal)
            local_wal_capture_begin(st->wal); /* the record starts over too */
        i = (size_t)-1;                       /* again from the first change still in */
    }
    uint64_t id = 0;
    if (s == STOR_OK && live) {
        /* Inside the transaction: the cut of a sync point after this
         * commit knows every file it references. */
        for (size_t i = 0; i < n; i++)
            if (m[i]->status == STOR_OK && m[i]->new_file)
                local_new_file(st, m[i]->new_file);
        s = local_wr_commit_only(st, txn, &id);
    } else if (s == STOR_OK) {
        mdb_txn_abort(txn); /* every change failed: nothing to commit */
    }
    uint64_t lsn = 0;
    if (st->wal) {
        local_wal_capture_end(st->wal);
        if (s == STOR_OK && live)
            lsn = group_log(st, id);
    }
    for (size_t i = 0; i < n; i++) {
        if (m[i]->status != STOR_OK)
            continue;
        m[i]->status = s;
        m[i]->applied = s == STOR_OK;
        m[i]->txnid = id;
        m[i]->lsn = lsn;
    }
}

/* The leader's turn: leader is the queue's head. */
static void group_lead(lstor_t *st, local_change_t *leader)
{
    local_change_t *m[LOCAL_GROUP_MAX];
    size_t n = 0;
    MDB_txn *txn;
    stor_status_t s = local_wr_begin(st, &txn);
    if (s == STOR_OK && st->wal)
        local_wal_capture_begin(st->wal);
    pthread_mutex_lock(&st->group_lock);
    while (n < LOCAL_GROUP_MAX && st->group_head) {
        m[n++] = st->group_head;
        st->group_head = st->group_head->next;
    }
    if (!st->group_head)
        st->group_tail = NULL;
    st->group_queued -= n;
    pthread_mutex_unlock(&st->group_lock);

    if (s == STOR_OK) {
        group_run(st, m, n, txn);
    } else {
        for (size_t i = 0; i < n; i++)
            m[i]->status = s;
    }

    pthread_mutex_lock(&st->group_lock);
    for (size_t i = 0; i < n; i++) {
        m[i]->state = CH_DONE;
        if (m[i] != leader)
            pthread_cond_signal(&m[i]->cv);
    }
    /* The lead passes to the next change queued, or no group runs. */
    if (st->group_head) {
        st->group_head->state = CH_LEAD;
        pthread_cond_signal(&st->group_head->cv);
    } else {
        st->group_leading = 0;
    }
    pthread_mutex_unlock(&st->group_lock);
}

stor_status_t local_group_apply(lstor_t *st, local_change_t *c)
{
    c->applied = 0;
    c->status = STOR_OK;
    c->txnid = 0;
    c->lsn = 0;
    c->next = NULL;
    c->state = CH_QUEUED;
    pthread_cond_init(&c->cv, NULL);
    pthread_mutex_lock(&st->group_lock);
    if (st->group_tail)
        st->group_tail->next = c;
    else
        st->group_head = c;
    st->group_tail = c;
    st->group_queued++;
    if (!st->group_leading) {
        st->group_leading = 1;
        c->state = CH_LEAD;
    }
    while (c->state == CH_QUEUED)
        pthread_cond_wait(&c->cv, &st->group_lock);
    int lead = c->state == CH_LEAD;
    pthread_mutex_unlock(&st->group_lock);
    if (lead)
        group_lead(st, c);
    pthread_cond_destroy(&c->cv);
    return c->applied ? STOR_OK : c->status;
}

stor_status_t local_group_durable(lstor_t *st, const local_change_t *c, uint64_t *ticket_p)
{
    if (c->lsn && ticket_p) {
        *ticket_p = c->lsn;
        return STOR_OK;
    }
    if (c->lsn)
        return local_wal_flush(st->wal, c->lsn) == 0 ? STOR_OK : STOR_ERR_IO;
    return local_wr_durable(st, c->txnid);
}

stor_status_t local_group_commit(lstor_t *st, local_change_t *c)
{
    stor_status_t s = local_group_apply(st, c);
    return s == STOR_OK ? local_group_durable(st, c, NULL) : s;
}

void local_ticket_await(stor_t *st_, stor_ticket_t ticket, stor_durable_fn done, void *arg)
{
    lstor_t *st = (lstor_t *)st_;
    local_wal_await(st->wal, ticket, done, arg); /* only the log gives tickets */
}
