/*
 * baton.pml: the ownership protocol of baton as the code implements it,
 * for SPIN (docs/model.md explains the model, docs/design.md "The model
 * and the code" says which code each process stands for).
 *
 * Size (spin -D...):  NW workers, NP partitions, NC coordinators, NIN input
 * records per partition, FAULTS faults the nemesis may inject in total.
 *
 * Variants with known defects, each of which must produce a trail
 * (model/check.sh):
 *   -DNOFENCE     the sink's epoch check on writes removed
 *   -DNOSUSPEND   the worker's self-suspension removed (can_write ignores
 *                 the silence of its session)
 *   -DOLDSTANDBY  the standby as it was before issue 20: a deletion is not
 *                 re-checked, no verify read and no give-back after a
 *                 promotion, the coordinator neither notices a member's new
 *                 incarnation nor sweeps settled partitions
 *   -DOLDGEN      a publish's generation is /assignment's + 1, not past
 *                 every published node's (before issue 20)
 *   -DNODEDUP     the sink's offset rule removed: a write applies every
 *                 input, also one below next_offset (a retry after a lost
 *                 COMMIT reply applies it twice)
 *   -DNOYIELD     (with -DAHEAD) a standby's claim made ahead of time stays
 *                 when it finds itself lowest without a promotion: the
 *                 owner let go without leaving, and the next owner waits
 *                 behind it (for good with -DWATCHDOG=0)
 *   -DNOTICEEARLY (with -DNOTICE) the release notice sent before the
 *                 leaver's flush (on_released), not after it: the standby
 *                 owns while the leaver still does
 *   -DOLDDELETE   a claim delete that fails (a lost connection) forgets the
 *                 claim all the same (delete_claim before issue 21's fix):
 *                 the claim stays with our live session and blocks the
 *                 next owner until the watchdog revokes it (run with
 *                 -DWATCHDOG=0, --handoff-timeout-ms 0: for good)
 *
 * Configuration: -DWATCHDOG=0 is a coordinator with --handoff-timeout-ms 0
 * (no handoff watchdog), a configuration the product allows. -DAHEAD is a
 * group of workers with standby.claim=ahead: a standby keeps a claim of
 * each partition it stands by for queued behind the owner's, all along,
 * so a leave or a crash finds it in the queue already (docs/model.md).
 * -DNOTICE (with -DAHEAD) adds standby.notice: a leaver, once flushed,
 * tells its standbys which claims it released, over an unreliable channel
 * (a datagram: lost, late, duplicated), and a standby waiting behind
 * exactly that claim takes it as deleted (docs/model.md).
 */

#ifndef NW
#define NW 3
#endif
#ifndef NP
#define NP 2
#endif
#ifndef NC
#define NC 2
#endif
#ifndef NIN
#define NIN 2
#endif
#ifndef FAULTS
#define FAULTS 2
#endif
/* which faults the nemesis may inject (all by default) */
#ifndef F_CRASH
#define F_CRASH 1
#endif
#ifndef F_CUT
#define F_CUT 1
#endif
#ifndef F_STOP
#define F_STOP 1
#endif
#ifndef F_CKILL
#define F_CKILL 1
#endif
#ifndef F_LOSTREPLY
#define F_LOSTREPLY 1
#endif
#ifndef F_LOSTDEL
#define F_LOSTDEL 1
#endif
/* a write's COMMIT applied, its reply lost (BATON_CONNECTION): retried */
#ifndef F_LOSTWRITE
#define F_LOSTWRITE 1
#endif
#ifndef WATCHDOG
#define WATCHDOG 1
#endif
#define MAXCL 5 /* claims one partition's directory can hold in the model */
#ifndef MAXCTR
#define MAXCTR 250
#endif
#ifdef NOFENCE
#define NOFENCE_ 1
#else
#define NOFENCE_ 0
#endif

#ifdef AHEAD
#define AHEAD_ 1
#else
#define AHEAD_ 0
#endif

#ifdef NOTICE
#define NOTICE_ 1
#else
#define NOTICE_ 0
#endif

#ifdef OLDSTANDBY
#define FIX20 0
#else
#define FIX20 1
#endif

/* may_write(w): baton_membership_can_write (membership.c). The lease
 * abstraction: w_fresh[w] is "the latest answered probe is younger than
 * 2/3 of the session timeout"; the server can expire the session only
 * after a whole timeout of silence, so only once w_fresh is 0. */
#ifdef NOSUSPEND
#define MAYW(w) (1)
#else
#define MAYW(w) (w_fresh[w])
#endif

/* worker w's ZooKeeper requests get answers: connected, session alive */
#define ZK_OK (!w_cut[w] && (sess[w] & BIT(cur[w])))
#define WP(w, zp) ((w) * NP + (zp))
#define WO(w, zo) ((w) * NW + (zo))
#define BIT(zi) (1 << (zi))

/* Guarded choices: v takes any index whose C(index) holds (blocks when
 * none does, so an atomic step starting with one is only taken enabled). */
#if NW > 2
#define PICKW_2(zv, C) :: C(2) -> zv = 2
#else
#define PICKW_2(zv, C)
#endif
#define PICKW(zv, C) if :: C(0) -> zv = 0 :: C(1) -> zv = 1 PICKW_2(zv, C) fi
#if NP > 1
#define PICKP(zv, C) if :: C(0) -> zv = 0 :: C(1) -> zv = 1 fi
#else
#define PICKP(zv, C) if :: C(0) -> zv = 0 fi
#endif
#define ANYW(C) (C(0) || C(1) || ANYW_2(C))
#if NW > 2
#define ANYW_2(C) C(2)
#else
#define ANYW_2(C) 0
#endif
#define ANYP(C) (C(0) || ANYP_1(C))
#if NP > 1
#define ANYP_1(C) C(1)
#else
#define ANYP_1(C) 0
#endif

/* ---------------------------------------------------------------- ZooKeeper
 * One linearizable store: every ZooKeeper request is one atomic step. The
 * czxid order of claims is kept by ctr (every claim takes the next value;
 * only their order matters, so the other zxids are not counted). */
byte ctr;               /* the last czxid given to a claim (the epochs) */
typedef claims_t {
    byte zn;
    byte cw[MAXCL];     /* the worker whose session made it */
    byte ci[MAXCL];     /* that session's incarnation */
    byte ce[MAXCL]      /* its czxid: the epoch; sequence order = this order */
};
claims_t cl[NP];        /* partitions/<p>/claims, lowest first */

byte sess[NW];          /* bit i: worker w's session of incarnation i lives */
byte cur[NW];           /* the incarnation worker w's process runs now */
byte mem[NW];           /* workers/<w>: the incarnation holding it, 0 none */
bit  leaving[NW];       /* workers/<w>: its leave mark */

byte meta_gen;          /* /assignment: generation */
byte meta_ver;          /* /assignment: version */
bit  node[NW];          /* assignment/<w> exists */
byte node_gen[NW];
byte node_parts[NW];    /* bit p: p is listed */
byte node_sb[NW * NW];  /* assignment/<w>'s standby: owner o -> bits of p */

byte cand[NC];          /* coordinators/: coordinator c's candidate sequence, 0 none */
byte cand_seq;

/* Watches (one-shot; a session's are lost when its connection is cut) */
bit  arm_asg[NW];       /* on assignment/<w> */
bit  ev_asg[NW];
byte arm_cl[NW * NP];   /* on the claim of this epoch (own or predecessor) */
bit  ev_cl[NW * NP];
bit  arm_sb[NW * NW];   /* standby w on workers/<o> */
byte ev_sb[NW * NW];    /* bits: 1 changed, 2 deleted, 4 created */
bit  ev_reconn[NW];     /* a reconnection: re-read everything */
bit  cwake[NC];         /* coordinator c: workers/ or a member node changed */
byte inflight[NW * NP]; /* a create whose reply was lost, not applied yet (non-zero) */

/* Connections and the lease */
bit  w_cut[NW];         /* worker w's connection is gone (disconnected or paused) */
bit  w_fresh[NW];       /* see MAYW */
bit  w_dead[NW];        /* the process crashed; it restarts with the same id */
bit  w_stop[NW];        /* SIGTERM: leave gracefully, then restart */
bit  w_running[NW];     /* registered and running its loop */

/* --------------------------------------------------------------- the sink
 * sink_sqlite.c / sink_pg.c: a fence row per partition (epoch, next_offset);
 * a write is checked against the epoch and moves next_offset with its
 * outputs, in one transaction (one atomic step here). */
byte fence_ep[NP];
byte next_off[NP];
byte max_ep[NP];        /* ghost: the highest epoch of an accepted write */
byte pend[NW * NP];     /* a write in flight: offset + 1 */
byte pend_ep[NW * NP];
byte pend_inc[NW * NP];
byte wres[NW * NP];     /* its answer to the worker: 1 OK, 2 STALE/UNFENCED,
                         * 3 the connection lost while COMMIT was in flight */
byte pend_off[NW * NP]; /* with OK: next_offset after it */

/* ------------------------------------------------------- the workers' state
 * (globals so that the properties can see it; each worker touches its own) */
bit  assigned[NW * NP];
bit  promoted[NW * NP];
byte promoted_gen[NW * NP];
bit  owned[NW * NP];
bit  fenced[NW * NP];
bit  uncertain[NW * NP];
bit  dirty[NW * NP];
byte claim[NW * NP];    /* the epoch of our claim, 0 none */
byte pos[NW * NP];      /* the next input offset to process */
byte w_gen[NW];
bit  all_dirty[NW];
bit  asg_dirty[NW];
byte sbl[NW * NW];      /* standby: what we stand by for owner o (bits of p) */
byte sb_fired[NW * NW]; /* 0, 1 leaving, 2 gone */
bit  sb_verify[NW * NW];
bit  sb_vdue[NW * NW];  /* NOTICE: promoted on a notice, the verify read not armed yet */
bit  sb_alive[NW * NW];
bit  sb_armed[NW * NW];
bit  revoked[NW * NP];  /* ghost: our claim was deleted by the watchdog while we own,
                         * or would own on its predecessor's deletion (pred1) */
bit  ahead_off[NW * NP]; /* AHEAD: our claim ahead of time found itself lowest, not
                          * assigned: deleted, made again after a back-off (once
                          * here, AHEAD_TRIES_MAX times in the code) or on the
                          * next assignment read */
bit  ahead_tried[NW * NP]; /* AHEAD: that retry was made */
byte ntc[NP];           /* NOTICE: the last release notice sent for p: the
                         * released claim's epoch (0 none); a receiver may take
                         * it any number of times, late, or never (lost), and a
                         * later leave's overwrites it */
byte ntc_w[NP];         /* its sender */
bit  mark_pend[NW];     /* NOTICE: the leave mark sent, not applied yet (the code
                         * does not wait for its answer before the notice) */
byte pred1[NW * NP];    /* waiting behind exactly one claim, watched: our claim's
                         * epoch then (pred_for: it speaks for that claim only) */
bit  pred_gone[NW * NP]; /* that one claim's deletion was seen */

byte faults = FAULTS;   /* what the nemesis may still do */
bit  gen_seen;          /* ghost: some publish happened */
byte gen_max;           /* ghost: the highest generation any publish wrote */

/* -DNOHIDDEN keeps them in the state vector (SPIN's breadth-first search,
 * -DBFS, refuses hidden variables; the must-fail runs use it to find the
 * shortest trail). */
#ifdef NOHIDDEN
#define HIDDEN
#else
#define HIDDEN hidden
#endif
/* Scratch variables of the atomic steps: every use lies inside one step
 * that never blocks after its first statement, so they carry nothing from
 * one state to the next and are kept out of the state vector. */
HIDDEN byte zp, zo, zk, zn, ze, zt, zv, zcc, zi, zx, zbest, zoff, zep, zhi, zhc, zhq, zhk, zhe;
HIDDEN byte zlow;
HIDDEN byte zload[NW];
HIDDEN byte zlive[NW];

/* ------------------------------------------------------------ helpers */

/* bits of the partitions worker w stands by for (any owner) */
#if NW > 2
#define SBALL(w) (sbl[WO(w, 0)] | sbl[WO(w, 1)] | sbl[WO(w, 2)])
#else
#define SBALL(w) (sbl[WO(w, 0)] | sbl[WO(w, 1)])
#endif

inline notify_node(zx) {
    if
    :: arm_asg[zx] -> ev_asg[zx] = 1; arm_asg[zx] = 0
    :: else
    fi
}

/* workers/<o> created (4), its data changed (1) or deleted (2) */
inline notify_member(zo, zt) {
    for (zhi : 0 .. NW - 1) {
        if
        :: arm_sb[WO(zhi, zo)] -> ev_sb[WO(zhi, zo)] = ev_sb[WO(zhi, zo)] | zt; arm_sb[WO(zhi, zo)] = 0
        :: else
        fi
    }
    for (zhc : 0 .. NC - 1) { cwake[zhc] = 1 }
}

/* deletes claim index k of partition q, firing watches on it */
inline claim_del(q, zk) {
    zhe = cl[q].ce[zk];
    for (zhi : zk .. cl[q].zn - 2) {
        cl[q].cw[zhi] = cl[q].cw[zhi + 1];
        cl[q].ci[zhi] = cl[q].ci[zhi + 1];
        cl[q].ce[zhi] = cl[q].ce[zhi + 1]
    }
    cl[q].zn--;
    cl[q].cw[cl[q].zn] = 0; cl[q].ci[cl[q].zn] = 0; cl[q].ce[cl[q].zn] = 0;
    for (zhi : 0 .. NW - 1) {
        if
        :: arm_cl[WP(zhi, q)] == zhe -> ev_cl[WP(zhi, q)] = 1; arm_cl[WP(zhi, q)] = 0
        :: else
        fi
    }
}

/* deletes the claim with epoch e of partition q, if it is there */
inline claim_del_ep(q, ze) {
    zhk = 0;
    do
    :: zhk < cl[q].zn && cl[q].ce[zhk] != ze -> zhk++
    :: else -> break
    od;
    if
    :: zhk < cl[q].zn -> claim_del(q, zhk)
    :: else
    fi
}

inline claim_add(q, zx, zi, ze) {
    assert(cl[q].zn < MAXCL);
    cl[q].cw[cl[q].zn] = zx; cl[q].ci[cl[q].zn] = zi; cl[q].ce[cl[q].zn] = ze;
    cl[q].zn++
}

inline next_ctr() {
    assert(ctr < MAXCTR);
    ctr++
}

/* Session (x, i) ends: its ephemerals go (member node, claims, a create in
 * flight); the watches it had set go with it. */
inline session_end(zx, zi) {
    sess[zx] = sess[zx] & ~BIT(zi);
    if
    :: mem[zx] == zi -> mem[zx] = 0; leaving[zx] = 0; notify_member(zx, 2)
    :: else
    fi;
    for (zhq : 0 .. NP - 1) {
        zhk = 0;
        do
        :: zhk < cl[zhq].zn && cl[zhq].cw[zhk] == zx && cl[zhq].ci[zhk] == zi -> claim_del(zhq, zhk)
        :: zhk < cl[zhq].zn && !(cl[zhq].cw[zhk] == zx && cl[zhq].ci[zhk] == zi) -> zhk++
        :: else -> break
        od;
        if
        :: cur[zx] == zi -> inflight[WP(zx, zhq)] = 0
        :: else
        fi
    }
}

/* drops every watch worker x's current connection had set */
inline watches_lost(zx) {
    arm_asg[zx] = 0;
    for (zhq : 0 .. NP - 1) { arm_cl[WP(zx, zhq)] = 0 }
    for (zhi : 0 .. NW - 1) { arm_sb[WO(zx, zhi)] = 0 }
}

/* ---------------------------------------------------------------- worker
 * worker/membership.c (baton_membership_poll and what it calls) and the
 * partition side of worker/worker.c (fence, write, release). */

/* NOTICE: the leave mark sent earlier is applied (the session lives) */
inline mark_apply(zx) {
    if
    :: mark_pend[zx] && mem[zx] == cur[zx] -> leaving[zx] = 1; notify_member(zx, 1); mark_pend[zx] = 0
    :: mark_pend[zx] && mem[zx] != cur[zx] -> mark_pend[zx] = 0
    :: else
    fi
}

/* NOTICE (notice_send): worker w tells its standbys every claim it
 * holds, each notice lost or not; nothing if NOTICE is off */
inline notice_send() {
    if
    :: NOTICE_ ->
        for (zp : 0 .. NP - 1) {
            if
            :: claim[WP(w, zp)] != 0 -> ntc[zp] = claim[WP(w, zp)]; ntc_w[zp] = w
            :: claim[WP(w, zp)] != 0 -> skip /* lost */
            :: else
            fi
        }
    :: else
    fi
}

/* lose_all + standby_clear: every partition dropped without a flush */
inline worker_forget() {
    for (zp : 0 .. NP - 1) {
        assigned[WP(w, zp)] = 0; promoted[WP(w, zp)] = 0; promoted_gen[WP(w, zp)] = 0;
        owned[WP(w, zp)] = 0; fenced[WP(w, zp)] = 0; uncertain[WP(w, zp)] = 0;
        dirty[WP(w, zp)] = 0; claim[WP(w, zp)] = 0; pos[WP(w, zp)] = 0;
        revoked[WP(w, zp)] = 0; ev_cl[WP(w, zp)] = 0; arm_cl[WP(w, zp)] = 0;
        ahead_off[WP(w, zp)] = 0; ahead_tried[WP(w, zp)] = 0;
        pred1[WP(w, zp)] = 0; pred_gone[WP(w, zp)] = 0;
        if
        :: pend[WP(w, zp)] == 0 ->
            wres[WP(w, zp)] = 0; pend_off[WP(w, zp)] = 0; pend_ep[WP(w, zp)] = 0;
            pend_inc[WP(w, zp)] = 0
        :: else /* in flight: the sink answers nobody */
        fi
    }
    for (zo : 0 .. NW - 1) {
        sbl[WO(w, zo)] = 0; sb_fired[WO(w, zo)] = 0; sb_verify[WO(w, zo)] = 0; sb_vdue[WO(w, zo)] = 0;
        sb_alive[WO(w, zo)] = 0; sb_armed[WO(w, zo)] = 0; ev_sb[WO(w, zo)] = 0;
        arm_sb[WO(w, zo)] = 0
    }
    w_gen[w] = 0; all_dirty[w] = 0; asg_dirty[w] = 0; ev_asg[w] = 0; arm_asg[w] = 0;
    ev_reconn[w] = 0
}

/* drop_rid / delete_claim: our claim of p goes */
inline drop_claim() {
    if
    :: claim[WP(w, zp)] != 0 -> claim_del_ep(zp, claim[WP(w, zp)])
    :: else
    fi;
    claim[WP(w, zp)] = 0; owned[WP(w, zp)] = 0; fenced[WP(w, zp)] = 0; revoked[WP(w, zp)] = 0
}

/* mb_delete_claim for a release or a drop after STALE: a ZooKeeper delete
 * that can fail. Not sent while the connection is down; or its reply lost
 * with the connection (a fault: it landed or not, and the connection is
 * cut). A failed delete keeps the claim known, not owned, and the row is
 * looked at again (the release retries the delete; an assigned row checks
 * its queue); -DOLDDELETE forgets it, as the code did before. */
inline drop_claim_req() {
    if
    :: claim[WP(w, zp)] != 0 && !ZK_OK ->
        zk = 0 /* not sent */
    :: claim[WP(w, zp)] != 0 && ZK_OK && F_LOSTDEL && faults > 0 ->
        faults--;
        if
        :: claim_del_ep(zp, claim[WP(w, zp)])
        :: skip
        fi;
        w_cut[w] = 1; watches_lost(w);
        zk = 0 /* failed, whether it landed or not */
    :: else -> zk = 1
    fi;
    if
    :: zk -> drop_claim()
    :: else ->
#ifdef OLDDELETE
        claim[WP(w, zp)] = 0;
#endif
        owned[WP(w, zp)] = 0; fenced[WP(w, zp)] = 0; revoked[WP(w, zp)] = 0;
        dirty[WP(w, zp)] = 1 /* retry_at: look again */
    fi
}

/* own_watch_send after a queue settled without a read: an exists on our
 * claim; gone already (deleted while we waited, its event not drained),
 * its NONODE answer is queued as the claim's deletion */
inline arm_own() {
    arm_cl[WP(w, zp)] = claim[WP(w, zp)]; ev_cl[WP(w, zp)] = 0;
    if
    :: zlow ->
        zhk = 0;
        do
        :: zhk < cl[zp].zn && cl[zp].ce[zhk] != claim[WP(w, zp)] -> zhk++
        :: else -> break
        od;
        if
        :: zhk == cl[zp].zn -> ev_cl[WP(w, zp)] = 1; arm_cl[WP(w, zp)] = 0
        :: else
        fi
    :: else
    fi
}

/* queue_decide + queue_settle on a listing of p's claims, with its watch.
 * Waiting behind exactly one claim (pred1), nothing is read while it
 * stays: its deletion's event (pred_gone) makes ours lowest without a
 * read, as mb_claims_reconcile does (no claim below ours is ever made
 * again). */
inline queue_check() {
    zlow = 0;
    if
    :: pred1[WP(w, zp)] != 0 && pred1[WP(w, zp)] == claim[WP(w, zp)] && !uncertain[WP(w, zp)] &&
       !pred_gone[WP(w, zp)] ->
        dirty[WP(w, zp)] = 0 /* nothing to ask: the watch tells */
    :: else ->
    if
    :: pred1[WP(w, zp)] != 0 && pred1[WP(w, zp)] == claim[WP(w, zp)] && !uncertain[WP(w, zp)] ->
        zlow = 1; zk = 0
    :: else ->
        /* our session's claims: a create that landed after the lookup leaves two */
        zk = 0; zn = 0; ze = 0;
        do
        :: zk < cl[zp].zn ->
            if
            :: cl[zp].cw[zk] == w && cl[zp].ci[zk] == cur[w] ->
                zn++;
                if
                :: ze == 0 -> ze = cl[zp].ce[zk]
                :: else
                fi
            :: else
            fi;
            zk++
        :: else -> break
        od;
        if
        :: zn > 1 ->
            /* keep the lowest, or the one an owner's epoch came from */
            if
            :: owned[WP(w, zp)] -> ze = claim[WP(w, zp)]
            :: else
            fi;
            zk = 0;
            do
            :: zk < cl[zp].zn && cl[zp].cw[zk] == w && cl[zp].ci[zk] == cur[w] && cl[zp].ce[zk] != ze ->
                claim_del(zp, zk)
            :: zk < cl[zp].zn && !(cl[zp].cw[zk] == w && cl[zp].ci[zk] == cur[w] && cl[zp].ce[zk] != ze) ->
                zk++
            :: else -> break
            od;
            claim[WP(w, zp)] = ze
        :: else
        fi;
        /* where is ours */
        zk = 0;
        do
        :: zk < cl[zp].zn && cl[zp].ce[zk] != claim[WP(w, zp)] -> zk++
        :: else -> break
        od
    fi;
    pred1[WP(w, zp)] = 0; pred_gone[WP(w, zp)] = 0;
    if
    :: zk == cl[zp].zn && !zlow ->
        /* claim_lost: removed by someone else; claim again if assigned */
        claim[WP(w, zp)] = 0; owned[WP(w, zp)] = 0; fenced[WP(w, zp)] = 0; revoked[WP(w, zp)] = 0;
        dirty[WP(w, zp)] = 1
    :: zk == 0 && (zlow || zk < cl[zp].zn) && !assigned[WP(w, zp)] ->
        /* AHEAD (mb_ahead_lowest): a standby's claim ahead of time is
         * lowest, and we were not promoted. If the owner we stand by for
         * is gone or marked leaving (its member node's event not drained
         * yet), promote as that event would, and own. Otherwise the owner let go without
         * leaving (a move, a drop) or has not claimed yet, and whoever
         * comes next would wait behind us. Yield: delete it (the release
         * step), and try again after a back-off (AHEAD_RETRY) or on the
         * next assignment. */
        zo = NW;
        for (zhi : 0 .. NW - 1) {
            if
            :: (sbl[WO(w, zhi)] & BIT(zp)) && (mem[zhi] == 0 || leaving[zhi]) -> zo = zhi
            :: else
            fi
        }
        if
        :: zo < NW ->
            for (zhq : 0 .. NP - 1) {
                if
                :: (sbl[WO(w, zo)] & BIT(zhq)) && !assigned[WP(w, zhq)] ->
                    assigned[WP(w, zhq)] = 1; promoted[WP(w, zhq)] = 1;
                    promoted_gen[WP(w, zhq)] = w_gen[w]; dirty[WP(w, zhq)] = 1
                :: else
                fi
            }
            sb_fired[WO(w, zo)] = 0; sb_verify[WO(w, zo)] = 1; sb_armed[WO(w, zo)] = 0;
            arm_own();
            if
            :: MAYW(w) -> owned[WP(w, zp)] = 1; fenced[WP(w, zp)] = 0; dirty[WP(w, zp)] = 0
            :: else -> dirty[WP(w, zp)] = 1
            fi
        :: else ->
#ifdef NOYIELD
            arm_cl[WP(w, zp)] = claim[WP(w, zp)]; ev_cl[WP(w, zp)] = 0; dirty[WP(w, zp)] = 0
#else
            ahead_off[WP(w, zp)] = 1; dirty[WP(w, zp)] = 1
#endif
        fi
    :: zk == 0 && (zlow || zk < cl[zp].zn) && assigned[WP(w, zp)] ->
        /* lowest: ours (if we may write), and watch our own claim */
        arm_own();
        if
        :: owned[WP(w, zp)] -> dirty[WP(w, zp)] = 0
        :: !owned[WP(w, zp)] && MAYW(w) ->
            owned[WP(w, zp)] = 1; fenced[WP(w, zp)] = 0; dirty[WP(w, zp)] = 0
        :: else -> dirty[WP(w, zp)] = 1 /* suspended: look again */
        fi
    :: else ->
        /* waiting: watch the predecessor only */
        arm_cl[WP(w, zp)] = cl[zp].ce[zk - 1]; ev_cl[WP(w, zp)] = 0; dirty[WP(w, zp)] = 0;
        if
        :: zk == 1 -> pred1[WP(w, zp)] = claim[WP(w, zp)] /* the only one below */
        :: else
        fi
    fi
    fi
}

/* the pieces of one poll's reads (see the poll step in Worker) */
inline poll_drain() {
        if
        :: ev_reconn[w] -> all_dirty[w] = 1; ev_reconn[w] = 0
        :: else
        fi;
        if
        :: ev_asg[w] -> asg_dirty[w] = 1; ev_asg[w] = 0
        :: else
        fi;
        for (zp : 0 .. NP - 1) {
            if
            :: ev_cl[WP(w, zp)] ->
                ev_cl[WP(w, zp)] = 0; dirty[WP(w, zp)] = 1;
                /* mb_claim_news: waiting, the one watch is on the one
                 * claim below ours, and this is its deletion */
                if
                :: pred1[WP(w, zp)] != 0 && pred1[WP(w, zp)] == claim[WP(w, zp)] ->
                    pred_gone[WP(w, zp)] = 1
                :: else
                fi
            :: else
            fi
        };
        /* standby_note */
        for (zo : 0 .. NW - 1) {
            zt = ev_sb[WO(w, zo)];
            ev_sb[WO(w, zo)] = 0;
            if
            :: zt != 0 && sbl[WO(w, zo)] != 0 ->
                sb_armed[WO(w, zo)] = 0;
                if
                :: zt & 2 -> sb_fired[WO(w, zo)] = 2
                :: !(zt & 2) && (zt & 1) -> sb_fired[WO(w, zo)] = 1
                :: else
                fi;
#if FIX20
                if
                :: zt & 4 -> sb_alive[WO(w, zo)] = 1
                :: else
                fi
#else
                skip
#endif
            :: else
            fi
        }
}

/* mb_claims_settle_known: before the assignment's read (and the standby
 * promotion and give-back), an assigned partition whose one predecessor's
 * deletion was drained is acquired without a read */
inline poll_settle() {
        for (zp : 0 .. NP - 1) {
            if
            :: dirty[WP(w, zp)] && assigned[WP(w, zp)] && claim[WP(w, zp)] != 0 &&
               pred1[WP(w, zp)] == claim[WP(w, zp)] && pred_gone[WP(w, zp)] &&
               !uncertain[WP(w, zp)] -> queue_check()
            :: else
            fi
        }
}

/* a reconnection: re-read everything, the watches were lost */
inline poll_reconnected() {
        all_dirty[w] = 0; asg_dirty[w] = 1;
        for (zo : 0 .. NW - 1) {
            sb_armed[WO(w, zo)] = 0;
#if FIX20
            for (zp : 0 .. NP - 1) {
                if
                :: (sbl[WO(w, zo)] & BIT(zp)) && promoted[WP(w, zp)] -> sb_verify[WO(w, zo)] = 1
                :: else
                fi
            }
#endif
        }
        for (zp : 0 .. NP - 1) { dirty[WP(w, zp)] = 1; pred1[WP(w, zp)] = 0 }
}

/* read_assignment (re-arms the watch), standby_update */
inline poll_read_assignment() {
        asg_dirty[w] = 0; arm_asg[w] = 1;
        if
        :: node[w] -> zt = node_gen[w]; zn = node_parts[w]
        :: else -> zt = 0; zn = 0
        fi;
        for (zp : 0 .. NP - 1) {
            /* promoted_keep */
            zk = (zn & BIT(zp)) != 0;
            if
            :: promoted[WP(w, zp)] && (zk || zt > promoted_gen[WP(w, zp)]) -> promoted[WP(w, zp)] = 0
            :: promoted[WP(w, zp)] && !(zk || zt > promoted_gen[WP(w, zp)]) -> zk = 1
            :: else
            fi;
            if
            :: zk != assigned[WP(w, zp)] -> assigned[WP(w, zp)] = zk; dirty[WP(w, zp)] = 1
            :: else
            fi
        }
        w_gen[w] = zt;
        /* standby_update */
        for (zo : 0 .. NW - 1) {
            if
            :: node[w] -> sbl[WO(w, zo)] = node_sb[WO(w, zo)]
            :: else -> sbl[WO(w, zo)] = 0
            fi;
            if
            :: sbl[WO(w, zo)] == 0 ->
                sb_fired[WO(w, zo)] = 0; sb_verify[WO(w, zo)] = 0; sb_alive[WO(w, zo)] = 0;
                sb_vdue[WO(w, zo)] = 0;
                sb_armed[WO(w, zo)] = 0
            :: else
            fi
        }
        /* AHEAD (ahead_update): every unassigned partition we stand by for,
         * or hold a claim of, is looked at again: a claim made or kept
         * ahead of time, or deleted */
        for (zp : 0 .. NP - 1) {
            if
            :: AHEAD_ && !assigned[WP(w, zp)] ->
                ahead_off[WP(w, zp)] = 0; ahead_tried[WP(w, zp)] = 0;
                if
                :: claim[WP(w, zp)] != 0 || (SBALL(w) & BIT(zp)) -> dirty[WP(w, zp)] = 1
                :: else
                fi
            :: else
            fi
        }
}

/* standby_promote: only on a current assignment (after the read) */
inline poll_promote() {
        for (zo : 0 .. NW - 1) {
            if
            :: sb_alive[WO(w, zo)] ->
                /* standby_give_back */
                sb_alive[WO(w, zo)] = 0;
                for (zp : 0 .. NP - 1) {
                    if
                    :: (sbl[WO(w, zo)] & BIT(zp)) && promoted[WP(w, zp)] &&
                       promoted_gen[WP(w, zp)] == w_gen[w] ->
                        promoted[WP(w, zp)] = 0; assigned[WP(w, zp)] = 0; dirty[WP(w, zp)] = 1
                    :: else
                    fi
                }
            :: else
            fi;
            /* NOTICE: the owner's next news after a promotion on its notice
             * (its mark applied, or its node gone) arms the read (verify_due) */
            if
            :: sb_vdue[WO(w, zo)] && sb_fired[WO(w, zo)] != 0 && sb_fired[WO(w, zo)] != 3 ->
                sb_vdue[WO(w, zo)] = 0; sb_verify[WO(w, zo)] = 1; sb_armed[WO(w, zo)] = 0
            :: else
            fi;
            if
            :: FIX20 && sb_fired[WO(w, zo)] == 2 && mem[zo] != 0 ->
                /* standby_owner_exists: back already as another incarnation */
                sb_fired[WO(w, zo)] = 0; sb_armed[WO(w, zo)] = 0
            :: sb_fired[WO(w, zo)] != 0 && !(FIX20 && sb_fired[WO(w, zo)] == 2 && mem[zo] != 0) ->
                zk = 0;
                for (zp : 0 .. NP - 1) {
                    if
                    :: (sbl[WO(w, zo)] & BIT(zp)) && !assigned[WP(w, zp)] ->
                        assigned[WP(w, zp)] = 1; promoted[WP(w, zp)] = 1;
                        promoted_gen[WP(w, zp)] = w_gen[w]; dirty[WP(w, zp)] = 1; zk = 1
                    :: else
                    fi
                }
                if
                /* a promotion on a release notice (3) reads nothing: the
                 * mark it follows may not be applied yet, and a read
                 * would take the owner for live; the owner's next event
                 * arms the read (sb_vdue, above) */
                :: FIX20 && sb_fired[WO(w, zo)] != 3 && (zk || sb_fired[WO(w, zo)] == 2) ->
                    sb_verify[WO(w, zo)] = 1; sb_armed[WO(w, zo)] = 0
                :: sb_fired[WO(w, zo)] == 3 && zk -> sb_vdue[WO(w, zo)] = 1
                :: else
                fi;
                sb_fired[WO(w, zo)] = 0
            :: else
            fi
        }
}

/* standby_arm: a watch on each owner's member node; after a promotion a
 * read (standby_verify_done) */
inline poll_arm() {
        for (zo : 0 .. NW - 1) {
            if
            :: sbl[WO(w, zo)] && !sb_armed[WO(w, zo)] ->
                sb_armed[WO(w, zo)] = 1; arm_sb[WO(w, zo)] = 1;
                if
                :: FIX20 && sb_verify[WO(w, zo)] && mem[zo] != 0 && !leaving[zo] ->
                    /* live and not leaving: queued as its creation */
                    ev_sb[WO(w, zo)] = ev_sb[WO(w, zo)] | 4
                :: else
                fi;
                sb_verify[WO(w, zo)] = 0
            :: else
            fi
        }
}

/* per-partition conditions of worker w's steps. WANT_AHEAD: AHEAD, a
 * partition we stand by for and do not own: its claim is made, or kept,
 * ahead of time (queued behind the owner's) unless it yielded. */
#define WANT_AHEAD(q) (AHEAD_ && !assigned[WP(w, q)] && !owned[WP(w, q)] && \
                       (SBALL(w) & BIT(q)) != 0 && !ahead_off[WP(w, q)])
#define AHEAD_RETRY(q) (ahead_off[WP(w, q)] && !ahead_tried[WP(w, q)] && claim[WP(w, q)] == 0 && \
                        !uncertain[WP(w, q)] && cl[q].zn > 0)
#define REL_READY(q) (dirty[WP(w, q)] && !assigned[WP(w, q)] && !WANT_AHEAD(q) && \
                      pend[WP(w, q)] == 0 && wres[WP(w, q)] == 0)
#define CLAIM_READY(q) (dirty[WP(w, q)] && (assigned[WP(w, q)] || WANT_AHEAD(q)))
#define FENCE_READY(q) (owned[WP(w, q)] && !fenced[WP(w, q)] && \
                        (fence_ep[q] <= claim[WP(w, q)] || ZK_OK))
#define WRITE_READY(q) (owned[WP(w, q)] && fenced[WP(w, q)] && pos[WP(w, q)] < NIN && \
                        pend[WP(w, q)] == 0 && wres[WP(w, q)] == 0 && MAYW(w))
#define ANSWER_READY(q) (wres[WP(w, q)] != 0 && (wres[WP(w, q)] != 2 || ZK_OK))
#define EVCL(q) (ev_cl[WP(w, q)])
#define SB_EV(q) (ev_sb[WO(w, q)] != 0)
#define SB_ACT(q) (sb_fired[WO(w, q)] != 0 || sb_alive[WO(w, q)])
#define SB_UNARMED(q) (sbl[WO(w, q)] != 0 && !sb_armed[WO(w, q)])
/* NOTICE: a release notice names the one claim our claim of q waits
 * behind (its watch is on it), and q is assigned to us or we stand by for
 * its sender on q (notice_apply) */
#define NTC_READY(q) (NOTICE_ && ntc[q] != 0 && ntc_w[q] != w && claim[WP(w, q)] != 0 && \
                      pred1[WP(w, q)] == claim[WP(w, q)] && !pred_gone[WP(w, q)] && \
                      !uncertain[WP(w, q)] && arm_cl[WP(w, q)] == ntc[q] && \
                      (assigned[WP(w, q)] || (sbl[WO(w, ntc_w[q])] & BIT(q)) != 0))

proctype Worker(byte w) {

restart:
    /* a new process (first start, or a restart with the same id) */
    atomic {
        worker_forget();
        w_running[w] = 0; w_dead[w] = 0; w_stop[w] = 0;
        mark_pend[w] = 0 /* a dead process's mark: its session's end decides */
    };
newsession:
    {
    atomic {
        /* a new session; incarnations only grow */
        assert(cur[w] < 7);
        cur[w]++;
        sess[w] = sess[w] | BIT(cur[w]);
        w_cut[w] = 0; w_fresh[w] = 1
    };
    /* register_member: workers/<w> may still be an earlier incarnation's,
     * whose session has not expired yet: wait for it to go */
    atomic {
        ZK_OK && mem[w] == 0 ->
        mem[w] = cur[w]; leaving[w] = 0; notify_member(w, 4);
        w_running[w] = 1;
        all_dirty[w] = 1; asg_dirty[w] = 1
    };
end_loop:
    do
    /* the session expired: drop everything without flushing, rejoin */
    :: atomic {
        !w_cut[w] && !(sess[w] & BIT(cur[w])) ->
        worker_forget(); w_running[w] = 0; goto newsession
       }

    /* One poll's reads (baton_membership_poll up to the claims): drain
     * the event queue, re-read everything after a reconnection, read the
     * assignment, promote as a standby (only on a current assignment) and
     * re-arm the standby watches. One atomic step: see docs/model.md. */
    :: atomic {
        ZK_OK && (ev_reconn[w] || ev_asg[w] || all_dirty[w] || asg_dirty[w] || ANYP(EVCL) ||
                  ANYW(SB_EV) || ANYW(SB_ACT) || ANYW(SB_UNARMED)) ->
        poll_drain();
        if
        :: all_dirty[w] -> poll_reconnected()
        :: else
        fi;
        poll_settle();
        if
        :: asg_dirty[w] -> poll_read_assignment()
        :: else
        fi;
        poll_promote();
        poll_arm()
       }

    /* NOTICE (notice_apply): a release notice for the claim ours waits
     * behind is its deletion's event, come early; from the owner we stand
     * by for, it is also its leave mark's (a promotion without the read) */
    :: atomic {
        ANYP(NTC_READY) ->
        PICKP(zp, NTC_READY);
        pred_gone[WP(w, zp)] = 1; dirty[WP(w, zp)] = 1;
        zo = ntc_w[zp];
        if
        :: (sbl[WO(w, zo)] & BIT(zp)) && sb_fired[WO(w, zo)] == 0 -> sb_fired[WO(w, zo)] = 3
        :: else
        fi
       }

    /* release (reconcile_partition of an unassigned one): on_released
     * waited for the write in flight (the flush); the claim's delete is a
     * ZooKeeper request */
    :: atomic {
        ZK_OK && ANYP(REL_READY) ->
        PICKP(zp, REL_READY);
        dirty[WP(w, zp)] = 0;
        if
        :: uncertain[WP(w, zp)] && claim[WP(w, zp)] == 0 ->
            /* find_own_claim: an orphan claim of ours is deleted */
            zk = 0;
            do
            :: zk < cl[zp].zn && cl[zp].cw[zk] == w && cl[zp].ci[zk] == cur[w] -> claim_del(zp, zk)
            :: zk < cl[zp].zn && !(cl[zp].cw[zk] == w && cl[zp].ci[zk] == cur[w]) -> zk++
            :: else -> break
            od
        :: else
        fi;
        uncertain[WP(w, zp)] = 0;
        drop_claim_req();
        /* AHEAD (ahead_after_release): let go of a partition we now stand
         * by for, its claim ahead of time comes after a back-off, once the
         * new owner's claim is there to queue behind (AHEAD_RETRY) */
        if
        :: AHEAD_ && zk && (SBALL(w) & BIT(zp)) && !assigned[WP(w, zp)] -> ahead_off[WP(w, zp)] = 1
        :: else
        fi
       }

    /* claims_reconcile: a create goes with its queue check (one flight) */
    :: atomic {
        ZK_OK && !all_dirty[w] && ANYP(CLAIM_READY) ->
        PICKP(zp, CLAIM_READY);
        if
        :: claim[WP(w, zp)] == 0 && !uncertain[WP(w, zp)] ->
            next_ctr();
            if
            :: true ->
                claim_add(zp, w, cur[w], ctr); claim[WP(w, zp)] = ctr; queue_check()
            :: F_LOSTREPLY && faults > 0 && inflight[WP(w, zp)] == 0 ->
                /* the create's reply is lost (connection loss): it landed,
                 * or it lands later */
                faults--;
                uncertain[WP(w, zp)] = 1;
                if
                :: claim_add(zp, w, cur[w], ctr)
                :: inflight[WP(w, zp)] = ctr
                fi
            fi
        :: claim[WP(w, zp)] == 0 && uncertain[WP(w, zp)] ->
            /* find_own_claim: sync, list, adopt the lowest of our session */
            uncertain[WP(w, zp)] = 0;
            zk = 0;
            do
            :: zk < cl[zp].zn && !(cl[zp].cw[zk] == w && cl[zp].ci[zk] == cur[w]) -> zk++
            :: else -> break
            od;
            if
            :: zk < cl[zp].zn -> claim[WP(w, zp)] = cl[zp].ce[zk]; queue_check()
            :: else /* none: create, next time round */
            fi
        :: claim[WP(w, zp)] != 0 -> queue_check()
        fi
       }

    /* AHEAD (ahead_retry): the yield's back-off has passed, try again, a
     * bounded number of times between assignment reads (two standbys
     * named by nodes of different generations would otherwise yield to
     * each other until the coordinator's next publish). Only once another
     * claim is in the queue: a try that finds none yields again at once,
     * a step that changes nothing but the epoch counter */
    :: atomic {
        ANYP(AHEAD_RETRY) ->
        PICKP(zp, AHEAD_RETRY);
        ahead_off[WP(w, zp)] = 0; ahead_tried[WP(w, zp)] = 1; dirty[WP(w, zp)] = 1
       }

    /* fence (worker.c, after on_acquired): a sink transaction */
    :: atomic {
        ANYP(FENCE_READY) ->
        PICKP(zp, FENCE_READY);
        if
        :: fence_ep[zp] > claim[WP(w, zp)] ->
            /* STALE: drop_rid (a ZooKeeper delete) */
            drop_claim_req(); dirty[WP(w, zp)] = 1
        :: else -> fence_ep[zp] = claim[WP(w, zp)]; fenced[WP(w, zp)] = 1; pos[WP(w, zp)] = next_off[zp]
        fi
       }

    /* consume a record and write it (part_flush, only if can_write); the
     * request travels to the sink on its own (Sink) */
    :: atomic {
        ANYP(WRITE_READY) ->
        PICKP(zp, WRITE_READY);
        pend[WP(w, zp)] = pos[WP(w, zp)] + 1; pend_ep[WP(w, zp)] = claim[WP(w, zp)];
        pend_inc[WP(w, zp)] = cur[w]
       }
    /* the write's answer */
    :: atomic {
        ANYP(ANSWER_READY) ->
        PICKP(zp, ANSWER_READY);
        if
        :: wres[WP(w, zp)] == 1 && owned[WP(w, zp)] && claim[WP(w, zp)] == pend_ep[WP(w, zp)] ->
            pos[WP(w, zp)] = pend_off[WP(w, zp)]
        :: wres[WP(w, zp)] == 2 && owned[WP(w, zp)] && claim[WP(w, zp)] == pend_ep[WP(w, zp)] ->
            /* STALE: drop (a ZooKeeper delete) */
            drop_claim_req(); dirty[WP(w, zp)] = 1
        :: wres[WP(w, zp)] == 3 ->
            /* BATON_CONNECTION (part_flush_done): the batch is kept and
             * written again from pos, unchanged; what did commit is
             * skipped by the sink's offset rule */
            skip
        :: else /* an answer for a claim we no longer own */
        fi;
        wres[WP(w, zp)] = 0; pend_off[WP(w, zp)] = 0; pend_ep[WP(w, zp)] = 0; pend_inc[WP(w, zp)] = 0
       }

    /* SIGTERM: baton_membership_leave. The mark first (with NOTICE sent
     * without waiting for its answer: the server applies it later, before
     * the claims' multi), */
    :: atomic {
        w_stop[w] && ZK_OK ->
        if
        :: NOTICE_ -> mark_pend[w] = 1
        :: else -> leaving[w] = 1; notify_member(w, 1)
        fi
       };
#ifdef NOTICEEARLY
       atomic { notice_send() };
#endif
       /* on_released for everything we own, once the write in flight is
        * answered (the flush): the answer is taken here, since the loop
        * that takes answers otherwise is left (waiting for none, an answer
        * nobody took, deadlocked the leave: found with two stops) */
       atomic {
        pend[WP(w, 0)] == 0 && pend[WP(w, NP - 1)] == 0 ->
        for (zp : 0 .. NP - 1) {
            owned[WP(w, zp)] = 0; fenced[WP(w, zp)] = 0; revoked[WP(w, zp)] = 0;
            wres[WP(w, zp)] = 0; pend_off[WP(w, zp)] = 0; pend_ep[WP(w, zp)] = 0;
            pend_inc[WP(w, zp)] = 0
        }
       };
#ifndef NOTICEEARLY
       /* NOTICE: the release notice to the standbys, after the flush
        * (mb_leave: after worker.before_release, before the multi) */
       atomic { notice_send() };
#endif
       /* every claim in one multi (mb_claims_delete), then (leave_wait
        * over, whether the coordinator answered or LEAVE_WAIT_MS passed)
        * the member node goes and the session is closed; then a restart */
       atomic {
        if
        :: !(sess[w] & BIT(cur[w])) -> goto restart
        :: ZK_OK ->
            mark_apply(w);
            for (zp : 0 .. NP - 1) { drop_claim() }
        fi
       };
       atomic {
        if
        :: !(sess[w] & BIT(cur[w])) -> skip
        :: ZK_OK -> session_end(w, cur[w])
        fi;
        goto restart
       }
    od
    } unless { w_dead[w] };
    goto restart
}

/* ------------------------------------------------------------ coordinator
 * coordinator/coordinator.c: election by the lowest candidate node, the
 * plan (assignment/plan.c, a sticky assignor here) and the chunked publish
 * fenced by a check op on our own candidate node and /assignment's
 * version; the handoff watchdog. */
#if NC > 1
#define LEADS(zx, s) (cand[1 - (zx)] == 0 || cand[1 - (zx)] > (s))
#else
#define LEADS(zx, s) (1)
#endif

/* forgets the plan once published (or not), so that it is no state */
inline plan_clear() {
    rver = 0; gen = 0;
    for (zv : 0 .. NW - 1) {
        newp[zv] = 0; write1[zv] = 0; write2[zv] = 0; del[zv] = 0;
        for (zo : 0 .. NW - 1) { nsb[WO(zv, zo)] = 0 }
    }
}

/* the watchdog's condition for worker a and partition q */
#define HASCL(a, q, j) (j < cl[q].zn && cl[q].cw[j] == a && cl[q].ci[j] == mem[a])
#define WD(a, q) ((pending[q] || FIX20) && node[a] && (node_parts[a] & BIT(q)) && mem[a] != 0 && \
                  cl[q].zn > 1 && !HASCL(a, q, 0) && \
                  (HASCL(a, q, 1) || HASCL(a, q, 2) || HASCL(a, q, 3) || HASCL(a, q, 4)))
#define WD_P(q) WD(zv, q)
#if NP > 1
#define WD_ANY(a) (WD(a, 0) || WD(a, 1))
#else
#define WD_ANY(a) (WD(a, 0))
#endif

proctype Coord(byte c) {
    byte me;                    /* our candidate's sequence */
    byte rver, gen;             /* /assignment's version we read, the new generation */
    byte newp[NW];               /* the new partitions per worker */
    byte nsb[NW * NW];          /* the new standbys */
    byte known[NW];             /* the member cache's sessions (incarnations) */
    bit  write1[NW];            /* nodes of the first chunk (those that lose) */
    bit  write2[NW];            /* nodes of the last chunk */
    bit  del[NW];               /* nodes to delete (last chunk) */
    bit  republish;
    bit  sb_owed;               /* standbys deferred: plan again (standby_defer) */
    bit  pending[NP];           /* the watchdog times these */
    bit  fresh_leader;

join:
    atomic {
        plan_clear();
        cand_seq++; assert(cand_seq < MAXCTR); me = cand_seq; cand[c] = me;
        fresh_leader = 1; republish = 0;
        for (zv : 0 .. NW - 1) { known[zv] = 0 }
    };
end_loop:
    do
    /* our node is gone (its session expired while we were paused, or a
     * publish was refused): re-join at the back of the queue */
    :: atomic { cand[c] != me -> goto join }

    /* leading: read the group, plan, publish if it differs */
    :: atomic {
        cand[c] == me && (cwake[c] || republish || fresh_leader || sb_owed) &&
        LEADS(c, me) ->
        cwake[c] = 0;
        if
        :: fresh_leader -> fresh_leader = 0; for (zp : 0 .. NP - 1) { pending[zp] = 1 }
        :: else
        fi;
        for (zp : 0 .. NP - 1) {
            /* the watchdog stops timing a partition whose lowest claim is its
             * named owner's session */
            for (zv : 0 .. NW - 1) {
                if
                :: node[zv] && (node_parts[zv] & BIT(zp)) && mem[zv] != 0 && HASCL(zv, zp, 0) ->
                    pending[zp] = 0
                :: else
                fi
            }
        }
        rver = meta_ver;
        gen = meta_gen;
        for (zv : 0 .. NW - 1) {
            zlive[zv] = mem[zv] != 0 && !leaving[zv];
#if FIX20
            /* event=member_incarnation */
            if
            :: mem[zv] != 0 && known[zv] != 0 && known[zv] != mem[zv] -> republish = 1
            :: else
            fi;
#endif
            if
            :: mem[zv] != 0 -> known[zv] = mem[zv]
            :: else
            fi;
#ifndef OLDGEN
            if
            :: node[zv] && node_gen[zv] > gen -> gen = node_gen[zv]
            :: else
            fi;
#endif
            newp[zv] = 0; zload[zv] = 0
        }
        assert(gen < MAXCTR);
        gen++;
        /* sticky: a partition stays with a live owner that lists it */
        for (zp : 0 .. NP - 1) {
            zx = NW;
            for (zv : 0 .. NW - 1) {
                if
                :: zx == NW && node[zv] && (node_parts[zv] & BIT(zp)) && zlive[zv] -> zx = zv
                :: else
                fi
            }
            if
            :: zx < NW -> newp[zx] = newp[zx] | BIT(zp); zload[zx]++
            :: else
            fi
        }
        /* the others to the least loaded live member */
        for (zp : 0 .. NP - 1) {
            zx = NW;
            for (zv : 0 .. NW - 1) {
                if
                :: newp[zv] & BIT(zp) -> zx = zv
                :: else
                fi
            }
            if
            :: zx == NW ->
                zbest = NW;
                for (zv : 0 .. NW - 1) {
                    if
                    :: zlive[zv] && (zbest == NW || zload[zv] < zload[zbest]) -> zbest = zv
                    :: else
                    fi
                }
                if
                :: zbest < NW -> newp[zbest] = newp[zbest] | BIT(zp); zload[zbest]++
                :: else
                fi
            :: else
            fi
        }
        /* standbys (coord_standby.c): where o's partitions go if o leaves */
        for (zv : 0 .. NW - 1) {
            for (zo : 0 .. NW - 1) { nsb[WO(zv, zo)] = 0 }
        }
        for (zo : 0 .. NW - 1) {
            for (zp : 0 .. NP - 1) {
                if
                :: newp[zo] & BIT(zp) ->
                    zbest = NW;
                    for (zv : 0 .. NW - 1) {
                        if
                        :: zv != zo && zlive[zv] && (zbest == NW || zload[zv] < zload[zbest]) -> zbest = zv
                        :: else
                        fi
                    }
                    if
                    :: zbest < NW -> nsb[WO(zbest, zo)] = nsb[WO(zbest, zo)] | BIT(zp)
                    :: else
                    fi
                :: else
                fi
            }
        }
        /* standby_defer (coordinator.c): while no published node names a
         * standby, a plan that moves partitions may run while churn goes
         * on, and then names none either; the loop plans again once quiet
         * (its timer: sb_owed). A plan that moves nothing names them. */
        zx = 0;
        for (zv : 0 .. NW - 1) {
            if
            :: newp[zv] != (node[zv] -> node_parts[zv] : 0) -> zx = 1
            :: else
            fi
        }
        for (zv : 0 .. NW - 1) {
            for (zo : 0 .. NW - 1) {
                if
                :: node[zv] && node_sb[WO(zv, zo)] != 0 -> zx = 0
                :: else
                fi
            }
        }
        sb_owed = 0;
        if
        :: zx ->
            sb_owed = 1;
            for (zv : 0 .. NW - 1) {
                for (zo : 0 .. NW - 1) { nsb[WO(zv, zo)] = 0 }
            }
        :: true
        fi;
        /* the diff: losers first (chunk 1), the rest with /assignment last */
        zk = 0;
        for (zv : 0 .. NW - 1) {
            write1[zv] = 0; write2[zv] = 0; del[zv] = 0;
            if
            :: mem[zv] == 0 && node[zv] -> del[zv] = 1; zk = 1
            :: mem[zv] != 0 && !node[zv] -> write2[zv] = 1; zk = 1
            :: mem[zv] != 0 && node[zv] ->
                zx = node_parts[zv] != newp[zv];
                for (zo : 0 .. NW - 1) {
                    if
                    :: node_sb[WO(zv, zo)] != nsb[WO(zv, zo)] -> zx = 1
                    :: else
                    fi
                }
                if
                :: zx || republish ->
                    zk = 1;
                    if
                    :: node_parts[zv] & ~newp[zv] -> write1[zv] = 1
                    :: else -> write2[zv] = 1
                    fi
                :: else
                fi
            :: else
            fi
        }
        republish = 0;
        if
        :: zk == 0 -> plan_clear(); goto end_loop /* nothing changed: publish nothing */
        :: else
        fi;
        /* the watchdog times every partition whose owner moves */
        for (zp : 0 .. NP - 1) {
            for (zv : 0 .. NW - 1) {
                if
                :: (newp[zv] & BIT(zp)) && !(node[zv] && (node_parts[zv] & BIT(zp))) -> pending[zp] = 1
                :: else
                fi
            }
        }
       };
       /* chunk 1: check(our node), check(/assignment, version), the losers */
       atomic {
        if
        :: !(write1[0] || write1[1]
#if NW > 2
             || write1[2]
#endif
            ) -> skip
        :: else ->
            if
            :: cand[c] == me && meta_ver == rver ->
                /* generations never repeat: a publish's first chunk is past
                 * every generation any chunk wrote before */
                assert(!gen_seen || gen > gen_max);
                gen_seen = 1; gen_max = gen;
                for (zv : 0 .. NW - 1) {
                    if
                    :: write1[zv] ->
                        node[zv] = 1; node_gen[zv] = gen; node_parts[zv] = newp[zv];
                        for (zo : 0 .. NW - 1) { node_sb[WO(zv, zo)] = nsb[WO(zv, zo)] }
                        notify_node(zv)
                    :: else
                    fi
                }
            :: else ->
                /* event=deposed: delete our node if we have one, re-join */
                if
                :: cand[c] == me -> cand[c] = 0
                :: else
                fi;
                goto join
            fi
        fi
       };
       /* (coordinator.between_chunks) chunk 2: the rest, /assignment */
       atomic {
        if
        :: cand[c] == me && meta_ver == rver ->
            assert(!gen_seen || gen >= gen_max);
            if
            :: !(write1[0] || write1[1]
#if NW > 2
                 || write1[2]
#endif
                ) -> assert(!gen_seen || gen > gen_max)
            :: else
            fi;
            gen_seen = 1; gen_max = gen;
            for (zv : 0 .. NW - 1) {
                if
                :: write2[zv] ->
                    node[zv] = 1; node_gen[zv] = gen; node_parts[zv] = newp[zv];
                    for (zo : 0 .. NW - 1) { node_sb[WO(zv, zo)] = nsb[WO(zv, zo)] }
                    notify_node(zv)
                :: del[zv] ->
                    node[zv] = 0; node_gen[zv] = 0; node_parts[zv] = 0;
                    for (zo : 0 .. NW - 1) { node_sb[WO(zv, zo)] = 0 }
                    notify_node(zv)
                :: else
                fi
            }
            meta_gen = gen; meta_ver++; assert(meta_ver < MAXCTR);
            plan_clear()
        :: else ->
            if
            :: cand[c] == me -> cand[c] = 0
            :: else
            fi;
            goto join
        fi
       }

    /* the handoff watchdog (coordinator.c, handoff_*): "assigned to A,
     * lowest claim held by another session" is revoked after
     * --handoff-timeout-ms. The timeout is abstracted to "once A's own
     * claim waits behind it". Before issue 20 only moved partitions were
     * timed (pending); since, settled ones are swept too. */
    :: atomic {
        WATCHDOG && cand[c] == me && !fresh_leader && LEADS(c, me) && ANYW(WD_ANY) ->
        PICKW(zv, WD_ANY);
        PICKP(zp, WD_P);
        /* event=forced_revoke */
        zo = cl[zp].cw[0];
        if
        :: cl[zp].ci[0] == cur[zo] && claim[WP(zo, zp)] == cl[zp].ce[0] &&
           (owned[WP(zo, zp)] || pred1[WP(zo, zp)] == claim[WP(zo, zp)]) ->
            /* a live owner, or one about to own on its predecessor's
             * deletion without a read (pred1: that deletion happened, as
             * ours is lowest): it writes until it sees its claim gone */
            revoked[WP(zo, zp)] = 1
        :: else
        fi;
        if
        :: FIX20 && zo != zv -> republish = 1 /* a claim of another worker */
        :: else
        fi;
        claim_del(zp, 0)
       }
    od
}

/* ------------------------------------------------------------ the sink
 * A write's transaction (sq_write_body): the fence row's epoch, then the
 * outputs and next_offset together. Runs whenever the request arrives,
 * even if its sender crashed or paused meanwhile. */
#define PENDING(zi) (pend[zi] != 0)
#if NW * NP > 5
#define PICKI_5(zv, C) :: C(5) -> zv = 5
#else
#define PICKI_5(zv, C)
#endif
#if NW * NP > 4
#define PICKI_4(zv, C) :: C(4) -> zv = 4 PICKI_5(zv, C)
#else
#define PICKI_4(zv, C)
#endif
#if NW * NP > 3
#define PICKI_3(zv, C) :: C(3) -> zv = 3 PICKI_4(zv, C)
#else
#define PICKI_3(zv, C)
#endif
#if NW * NP > 2
#define PICKI_2(zv, C) :: C(2) -> zv = 2 PICKI_3(zv, C)
#else
#define PICKI_2(zv, C)
#endif
#define PICKI(zv, C) if :: C(0) -> zv = 0 :: C(1) -> zv = 1 PICKI_2(zv, C) fi

active proctype Sink() {
end_loop:
    do
    :: atomic {
        PICKI(zi, PENDING);
        zp = zi % NP; zoff = pend[zi] - 1; zep = pend_ep[zi]; pend[zi] = 0;
        if
        :: zep != fence_ep[zp] && !NOFENCE_ -> /* STALE or UNFENCED */
            if
            :: pend_inc[zi] == cur[zi / NP] -> wres[zi] = 2
            :: else -> pend_ep[zi] = 0; pend_inc[zi] = 0 /* its sender is gone */
            fi
        :: else ->
            /* Safety 1: no accepted write carries an epoch lower than one
             * the sink already accepted for that partition. */
            assert(zep >= max_ep[zp]);
            max_ep[zp] = zep;
#ifdef NODEDUP
            /* Safety 2 (below), with the offset rule removed */
            assert(zoff == next_off[zp]);
            next_off[zp] = zoff + 1;
#else
            if
            :: zoff >= next_off[zp] ->
                /* Safety 2: inputs are applied in order, none twice, none
                 * skipped: the outputs equal the inputs. */
                assert(zoff == next_off[zp]);
                next_off[zp] = zoff + 1
            :: else /* below next_offset: applied already, not again */
            fi;
#endif
            if
            :: pend_inc[zi] == cur[zi / NP] ->
                if
                :: wres[zi] = 1; pend_off[zi] = next_off[zp]
                /* the commit applied, its reply lost on the way */
                :: F_LOSTWRITE && faults > 0 -> wres[zi] = 3; faults--
                fi
            :: else -> pend_ep[zi] = 0; pend_inc[zi] = 0
            fi
        fi
       }
    od
}

/* ------------------------------------------------------------ the server
 * What ZooKeeper does on its own: expire the session of a process that is
 * gone (it cannot answer), apply a create in flight, let time pass for a
 * silent client, and reconnect it. */
#define OLDSESS(zx) ((sess[zx] & ~BIT(cur[zx])) != 0)
#define INFLIGHT(zi) (inflight[zi] != 0)
#define SILENT(zx) (w_cut[zx] && w_fresh[zx])
#define CUT(zx) (w_cut[zx])
#define MARKPEND(zx) (mark_pend[zx])

active proctype Server() {
end_loop:
    do
    /* a dead incarnation's session expires */
    :: atomic {
        PICKW(zv, OLDSESS);
        zi = 1;
        do
        :: zi == cur[zv] || !(sess[zv] & BIT(zi)) -> zi++
        :: else -> break
        od;
        session_end(zv, zi)
       }
    /* a create whose reply was lost lands (or died with its session):
     * its czxid, the epoch, is taken when it lands, after every create
     * applied meanwhile (taking the one of its send gave a claim an
     * epoch below a later claim's fence: an order ZooKeeper cannot
     * produce; found by model.twocoord) */
    :: atomic {
        PICKI(zi, INFLIGHT);
        zv = zi / NP;
        if
        :: sess[zv] & BIT(cur[zv]) -> next_ctr(); claim_add(zi % NP, zv, cur[zv], ctr)
        :: else
        fi;
        inflight[zi] = 0
       }
    /* NOTICE: a leave mark in flight is applied, or lost with its session */
    :: atomic {
        PICKW(zv, MARKPEND);
        if
        :: sess[zv] & BIT(cur[zv]) -> mark_apply(zv)
        :: else -> mark_pend[zv] = 0
        fi
       }
    /* silence: 2/3 of the session timeout pass without an answer */
    :: atomic {
        PICKW(zv, SILENT);
        w_fresh[zv] = 0
       }
    /* the connection comes back: a probe of a live session is answered
     * (writes resume, everything is read again); an expired one is learnt
     * by the worker's poll */
    :: atomic {
        PICKW(zv, CUT);
        w_cut[zv] = 0;
        if
        :: sess[zv] & BIT(cur[zv]) -> w_fresh[zv] = 1; ev_reconn[zv] = 1
        :: else
        fi
       }
    od
}

/* ------------------------------------------------------------ the nemesis
 * At most FAULTS faults, at any moment, then it stops. */
#define CRASHABLE(zx) (w_running[zx] && !w_dead[zx])
#define CUTTABLE(zx) (w_running[zx] && !w_cut[zx])
#define EXPIRABLE(zx) (w_cut[zx] && !w_fresh[zx] && (sess[zx] & BIT(cur[zx])))
#define STOPPABLE(zx) (w_running[zx] && !w_stop[zx] && !w_dead[zx])
#define KILLABLE(zx) (cand[zx] != 0)
#if NC > 1
#define PICKC(zv, C) if :: C(0) -> zv = 0 :: C(1) -> zv = 1 fi
#define ANYC(C) (C(0) || C(1))
#else
#define PICKC(zv, C) if :: C(0) -> zv = 0 fi
#define ANYC(C) (C(0))
#endif

active proctype Nemesis() {
    do
    /* crash (SIGKILL): the process restarts with the same id; its old
     * session lingers until the server expires it */
    :: atomic { F_CRASH && faults > 0 && ANYW(CRASHABLE) -> PICKW(zv, CRASHABLE); w_dead[zv] = 1; faults-- }
    /* a pause or a lost connection, for any length */
    :: atomic {
        F_CUT && faults > 0 && ANYW(CUTTABLE) -> PICKW(zv, CUTTABLE); w_cut[zv] = 1; watches_lost(zv); faults--
       }
    /* the pause or the cut lasts past the session timeout: the session
     * expires (part of the same fault) */
    :: atomic { ANYW(EXPIRABLE) -> PICKW(zv, EXPIRABLE); session_end(zv, cur[zv]) }
    /* SIGTERM: a graceful leave, then a restart with the same id */
    :: atomic { F_STOP && faults > 0 && ANYW(STOPPABLE) -> PICKW(zv, STOPPABLE); w_stop[zv] = 1; faults-- }
    /* a coordinator's session expires (a crash or a pause), wherever it
     * is: between publish chunks too */
    :: atomic { F_CKILL && faults > 0 && ANYC(KILLABLE) -> PICKC(zcc, KILLABLE); cand[zcc] = 0; faults-- }
    :: break
    od
}

/* ------------------------------------------------------------ properties */

/* Safety 3: at most one worker may write a partition (it owns it, and its
 * self-suspension lets it write) at any time. The one window the design
 * accepts is the watchdog's forced revoke of a live owner (or of one about
 * to own on its predecessor's deletion, pred1): it writes until it sees
 * its claim gone, and the sink's fence refuses it (Safety 1). */
#define MAYOWN(w, zp) (owned[WP(w, zp)] && MAYW(w) && !revoked[WP(w, zp)] && !w_dead[w])
#if NW > 2
#define ONE_OWNER(zp) (MAYOWN(0, zp) + MAYOWN(1, zp) + MAYOWN(2, zp) <= 1)
#else
#define ONE_OWNER(zp) (MAYOWN(0, zp) + MAYOWN(1, zp) <= 1)
#endif

active proctype Monitor() {
end_mon:
    atomic {
        !(ONE_OWNER(0)
#if NP > 1
          && ONE_OWNER(1)
#endif
         ) -> assert(false)
    }
}

/* Liveness: once the faults stop, every partition is eventually owned by
 * the worker the published assignment names (a live member, listed by no
 * other node), fenced with its claim's epoch, every input written, and it
 * stays so. The standby defect of issue 20 breaks this. */
#define NAMED(w, zp) (node[w] && (node_parts[w] & BIT(zp)) != 0)
#define SERVES(w, zp) (NAMED(w, zp) && mem[w] == cur[w] && w_running[w] && owned[WP(w, zp)] && \
                      fenced[WP(w, zp)] && fence_ep[zp] == claim[WP(w, zp)] && next_off[zp] == NIN)
#if NW > 2
#define SETTLED(zp) ((SERVES(0, zp) && !NAMED(1, zp) && !NAMED(2, zp)) || \
                    (SERVES(1, zp) && !NAMED(0, zp) && !NAMED(2, zp)) || \
                    (SERVES(2, zp) && !NAMED(0, zp) && !NAMED(1, zp)))
#else
#define SETTLED(zp) ((SERVES(0, zp) && !NAMED(1, zp)) || (SERVES(1, zp) && !NAMED(0, zp)))
#endif
#if NP > 1
#define ALL_SETTLED (SETTLED(0) && SETTLED(1))
#else
#define ALL_SETTLED (SETTLED(0))
#endif

/* Liveness, checked two ways. In every run the faults end (the nemesis
 * has a budget) and every process is then eventually quiet: a state where
 * nothing at all can move (SPIN's timeout) must be settled -- the check
 * of every safety run. The LTL formula "settles" below says the same of
 * every fair run, livelocks included (pan -a -f, the full run). */
active proctype Quiet() {
end_quiet:
    do
    :: timeout ->
#ifndef NOQUIET
        assert(ALL_SETTLED);
#endif
        break
    od
}

ltl settles { <>[] ALL_SETTLED }

init {
    atomic {
        for (zi : 0 .. NW - 1) { run Worker(zi) }
        for (zi : 0 .. NC - 1) { run Coord(zi) }
    }
}
