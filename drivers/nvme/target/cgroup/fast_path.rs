// SPDX-License-Identifier: GPL-2.0

//! Whether a command may run in the transport's own thread.
//!
//! A lane costs a wakeup and a context switch.  It is only needed where
//! something can put the submitting thread to sleep for the cgroup's sake;
//! elsewhere the command is associated with the cgroup and run right in the
//! transport's thread.  The decision is made per command from [`Facts`] the
//! glue reads, so a policy enabled or turned off later is seen by the next
//! command.

use crate::{
    nvmet::{Facts, QueueFacts},
    raw,
};
use kernel::prelude::*;

/// Where a namespace's Read and Write commands may run, from the module's
/// parameters when the namespace is enabled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `fast_path=0`: always in the execution context.
    Lanes,
    /// The default: in the transport's thread where [`check`] allows it.
    FastPath,
    /// The `inline_assoc=1` diagnostic: in the transport's thread whatever
    /// the queue's policies, so a throttled namespace stalls the transport.
    /// Still only from a kernel thread in task context: elsewhere the
    /// association and the NOIO scope would change the interrupted thread;
    /// and not the commands whose backend runs their work in the execution
    /// context (a file's Flush, DSM and Write Zeroes, zone management): run
    /// here, the backend would queue that work on nvmet's workqueue,
    /// charged to nobody.
    Inline,
}

impl Mode {
    /// The mode the module's parameters select.
    pub(crate) fn from_parameters(fast_path: bool, inline_assoc: bool) -> Self {
        if inline_assoc {
            Self::Inline
        } else if fast_path {
            Self::FastPath
        } else {
            Self::Lanes
        }
    }

    /// [`Mode::decide`] for the commands of a namespace that is backed by a
    /// file if `file`, compiled into the rule the glue applies to a
    /// command's facts word before anything else (see [`Rule`]).
    pub(crate) fn rule(self, file: bool) -> Rule {
        let file_bit = if file { raw::NVMET_CGROUP_F_FILE } else { 0 };
        // The command's own state: run and charged in the caller's thread
        // only while the namespace is live and the queue is not being
        // deleted ([`crate::exec::NsExec::dispatch`] handles the others).
        let state_mask = raw::NVMET_CGROUP_F_NS_LIVE | raw::NVMET_CGROUP_F_SQ_DYING;
        let state_want = raw::NVMET_CGROUP_F_NS_LIVE;
        match self {
            Self::Lanes => Rule::NEVER,
            Self::FastPath => {
                // `check`: a Read or Write from a kernel thread, on a live
                // blk-mq queue with no policy that sleeps the submitter,
                // and for a file, no io.max.
                let want = raw::NVMET_CGROUP_F_READ_WRITE
                    | raw::NVMET_CGROUP_F_KTHREAD_TASK
                    | raw::NVMET_CGROUP_F_QUEUE_LIVE
                    | raw::NVMET_CGROUP_F_BLK_MQ;
                let refused = raw::NVMET_CGROUP_F_IOCOST
                    | raw::NVMET_CGROUP_F_IOLATENCY
                    | raw::NVMET_CGROUP_F_BFQ
                    | if file {
                        raw::NVMET_CGROUP_F_THROTTLE
                    } else {
                        0
                    };
                Rule {
                    mask: want | refused | raw::NVMET_CGROUP_F_FILE | state_mask,
                    want: want | file_bit | state_want,
                }
            }
            // `decide`: not deferred, from a kernel thread.
            Self::Inline => Rule {
                mask: raw::NVMET_CGROUP_F_DEFERRED
                    | raw::NVMET_CGROUP_F_KTHREAD_TASK
                    | raw::NVMET_CGROUP_F_FILE
                    | state_mask,
                want: raw::NVMET_CGROUP_F_KTHREAD_TASK | file_bit | state_want,
            },
        }
    }

    /// Where a Read or Write from a transport's kernel thread (tcp, rdma,
    /// loop) would run now, given only the queue's facts: what the status
    /// file reports.
    pub(crate) fn decide_read_write(
        self,
        queue: Option<QueueFacts>,
        file: bool,
    ) -> Result<(), Reason> {
        self.decide(&Facts::read_write_from_kthread(queue, file))
    }

    /// How the status file names this mode (the module parameters' view).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Lanes => "lanes",
            Self::FastPath => "fast_path",
            Self::Inline => "inline_assoc",
        }
    }

    /// `Ok` if a command with these facts may run in the transport's thread
    /// in this mode, else why not.
    pub(crate) fn decide(self, f: &Facts) -> Result<(), Reason> {
        match self {
            Self::Lanes => Err(Reason::FastPathOff),
            Self::FastPath => check(f),
            Self::Inline if f.deferred() => Err(Reason::NotReadWrite),
            Self::Inline if f.kthread_task() => Ok(()),
            Self::Inline => Err(Reason::NotKthread),
        }
    }
}

/// [`Mode::decide`] as bits, for the glue: a command of the namespace runs
/// in the caller's thread, charged, when `facts & mask == want`.  It also
/// wants the namespace's own backend (the facts' file bit), the namespace
/// live and the submission queue not being deleted; a command it refuses
/// goes to [`crate::exec::NsExec::dispatch`], which decides again from the
/// same facts.  The tests check it against [`Mode::decide`] for every word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rule {
    pub(crate) mask: u32,
    pub(crate) want: u32,
}

impl Rule {
    /// Never in the caller's thread.
    const NEVER: Self = Self { mask: 0, want: 1 };

    /// Whether this is the fast path's rule for a block device's namespace,
    /// the common case, which the glue tests fact by fact without building
    /// the facts word (`nvmet_cgroup_req_plain()`): a Read or Write from a
    /// kernel thread, the namespace live and its submission queue not being
    /// deleted, on a live queue with no io.cost, io.latency or bfq, which
    /// [`crate::fast_context::FastContext`] saw was blk-mq.  The tests check
    /// that this is what the rule allows of every facts word of such a
    /// namespace ([`plain_allows`]).
    pub(crate) fn is_plain(self) -> bool {
        self == Mode::FastPath.rule(false)
    }

    /// Whether a command with the glue's facts word `f` runs in the
    /// caller's thread.
    #[cfg(CONFIG_KUNIT = "y")]
    const fn matches(self, f: u32) -> bool {
        f & self.mask == self.want
    }
}

/// Why a command goes to the execution context rather than running in the
/// transport's thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    /// The `fast_path` parameter was 0 when the namespace was enabled.
    FastPathOff,
    /// Not a Read or Write: the file backend defers Flush, DSM and Write
    /// Zeroes to a work item, and zone management does the same; that work is
    /// charged only when it runs in the execution context, where those have
    /// a lane of their own (see [`crate::exec`]).
    NotReadWrite,
    /// The caller is not a kernel thread in task context: bios are charged to
    /// a kthread's association only (nvmet-fc may execute from an LLDD's
    /// completion).
    NotKthread,
    /// The queue behind the namespace is not known (a file on a filesystem
    /// that may put its data elsewhere than its own device, or a stacking
    /// blk-mq driver, loop or request-based dm, whose lower devices'
    /// policies can hold the submitter) or is dying.
    QueueUnknown,
    /// A bio-based driver (dm, md, multipath) may pass the bio on to queues
    /// this check does not see.
    BioBased,
    /// io.cost is enabled: its rq-qos throttle sleeps a submitter over its
    /// cgroup's budget.
    IoCost,
    /// io.latency has a target: it sleeps a submitter over its depth.
    IoLatency,
    /// bfq limits the tag depth of a low-weight cgroup's writes; the
    /// submitter then waits for a tag.
    Bfq,
    /// io.max under a file: blk-throttle queues a throttled bio rather than
    /// sleeping its submitter, which suits the bdev backend, but a
    /// filesystem may wait for such a bio in the caller's thread (metadata
    /// reads, extending or unaligned direct writes).
    FileIoMax,
}

impl Reason {
    /// A few words for the status file (documented in the ABI file).
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Self::FastPathOff => "fast_path=0",
            Self::NotReadWrite => "not a read or write",
            Self::NotKthread => "caller not a kernel thread",
            Self::QueueUnknown => "device not known (stacked, or a filesystem other than ext2/3/4)",
            Self::BioBased => "bio-based device",
            Self::IoCost => "io.cost enabled",
            Self::IoLatency => "io.latency enabled",
            Self::Bfq => "bfq scheduler",
            Self::FileIoMax => "io.max on a file's device",
        }
    }
}

/// `Ok` if the command may run in the transport's thread, else why not.
///
/// wbt does not throttle nvmet's `REQ_SYNC | REQ_IDLE` writes, with or
/// without a cgroup, so it is no reason.  The facts are a snapshot, not held
/// across the submission (it would wait for the freeze that enables a
/// policy), so a command that passed just before a policy is enabled meets
/// it fresh: iolatency starts at an unlimited depth, iocost grants a cgroup
/// it activates half a period of budget.  Commands that see the freeze
/// (the queue's usage reference killed) go to the execution context.
pub(crate) fn check(f: &Facts) -> Result<(), Reason> {
    if !f.read_write() {
        return Err(Reason::NotReadWrite);
    }
    if !f.kthread_task() {
        return Err(Reason::NotKthread);
    }
    let q = f.queue().ok_or(Reason::QueueUnknown)?;
    if !q.blk_mq() {
        Err(Reason::BioBased)
    } else if q.iocost() {
        Err(Reason::IoCost)
    } else if q.iolatency() {
        Err(Reason::IoLatency)
    } else if q.bfq() {
        Err(Reason::Bfq)
    } else if f.file() && q.throttle() {
        Err(Reason::FileIoMax)
    } else {
        Ok(())
    }
}

/// `nvmet_cgroup_req_plain()` in facts: what the glue runs in the caller's
/// thread, without reading the facts word, for a namespace with a plain
/// rule ([`Rule::is_plain`]) on a blk-mq queue (which the glue does not
/// test: a queue's facts say blk-mq whenever they say live).
#[cfg(CONFIG_KUNIT = "y")]
const fn plain_allows(f: u32) -> bool {
    let wanted = raw::NVMET_CGROUP_F_READ_WRITE
        | raw::NVMET_CGROUP_F_KTHREAD_TASK
        | raw::NVMET_CGROUP_F_QUEUE_LIVE
        | raw::NVMET_CGROUP_F_NS_LIVE;
    let refused = raw::NVMET_CGROUP_F_IOCOST
        | raw::NVMET_CGROUP_F_IOLATENCY
        | raw::NVMET_CGROUP_F_BFQ
        | raw::NVMET_CGROUP_F_SQ_DYING;
    f & wanted == wanted && f & refused == 0
}

#[kunit_tests(nvmet_cgroup_fast_path)]
mod tests {
    use super::*;

    /// A bdev Read or Write from a kthread on a plain blk-mq queue.
    const PLAIN: Facts = Facts::read_write_from_kthread(Some(QueueFacts::PLAIN), false);

    fn with_queue(change: fn(QueueFacts) -> QueueFacts) -> Facts {
        PLAIN.with_queue(PLAIN.queue().map(change))
    }

    #[test]
    fn each_fact_decides() {
        let cases: [(Facts, Result<(), Reason>); 12] = [
            (PLAIN, Ok(())),
            (PLAIN.with_file(true), Ok(())),
            (with_queue(|q| q.with_throttle(true)), Ok(())),
            (PLAIN.with_read_write(false), Err(Reason::NotReadWrite)),
            (PLAIN.with_kthread_task(false), Err(Reason::NotKthread)),
            (PLAIN.with_queue(None), Err(Reason::QueueUnknown)),
            (with_queue(|q| q.with_blk_mq(false)), Err(Reason::BioBased)),
            (with_queue(|q| q.with_iocost(true)), Err(Reason::IoCost)),
            (
                with_queue(|q| q.with_iolatency(true)),
                Err(Reason::IoLatency),
            ),
            (with_queue(|q| q.with_bfq(true)), Err(Reason::Bfq)),
            (
                with_queue(|q| q.with_throttle(true)).with_file(true),
                Err(Reason::FileIoMax),
            ),
            (
                with_queue(|q| q.with_iocost(true)).with_read_write(false),
                Err(Reason::NotReadWrite),
            ),
        ];
        for (facts, expected) in cases {
            assert_eq!(check(&facts), expected);
        }
    }

    #[test]
    fn each_mode_decides() {
        let softirq = PLAIN.with_kthread_task(false);
        let iocost = with_queue(|q| q.with_iocost(true));
        // A file's Flush: its work runs where the command runs.
        let deferred = PLAIN
            .with_read_write(false)
            .with_deferred(true)
            .with_file(true);
        // A block device's Flush: it submits its bio and returns.
        let bdev_flush = PLAIN.with_read_write(false);
        let cases: [(Mode, Facts, Result<(), Reason>); 12] = [
            (Mode::Lanes, PLAIN, Err(Reason::FastPathOff)),
            (Mode::FastPath, PLAIN, Ok(())),
            (Mode::FastPath, iocost, Err(Reason::IoCost)),
            (Mode::FastPath, softirq, Err(Reason::NotKthread)),
            (Mode::Inline, iocost, Ok(())),
            (Mode::Inline, PLAIN, Ok(())),
            // An nvmet-fc LLDD's completion context must not be associated.
            (Mode::Inline, softirq, Err(Reason::NotKthread)),
            (
                Mode::Inline,
                iocost.with_kthread_task(false),
                Err(Reason::NotKthread),
            ),
            // A file's Flush, DSM, Write Zeroes: charged only in the
            // execution context, whatever the mode.
            (Mode::FastPath, deferred, Err(Reason::NotReadWrite)),
            (Mode::Inline, deferred, Err(Reason::NotReadWrite)),
            (Mode::FastPath, bdev_flush, Err(Reason::NotReadWrite)),
            (Mode::Inline, bdev_flush, Ok(())),
        ];
        for (mode, facts, expected) in cases {
            assert_eq!(mode.decide(&facts), expected);
        }
        // What the status file reports: a Read or Write from a transport's
        // kernel thread, given the queue alone.
        assert_eq!(
            Mode::FastPath.decide_read_write(PLAIN.queue(), false),
            Ok(())
        );
        assert_eq!(
            Mode::FastPath.decide_read_write(iocost.queue(), false),
            Err(Reason::IoCost)
        );
        assert_eq!(
            Mode::FastPath.decide_read_write(None, true),
            Err(Reason::QueueUnknown)
        );
        assert_eq!(
            Mode::Lanes.decide_read_write(PLAIN.queue(), false),
            Err(Reason::FastPathOff)
        );
        assert_eq!(
            Mode::Inline.decide_read_write(iocost.queue(), false),
            Ok(())
        );
        assert_eq!(Mode::from_parameters(true, false), Mode::FastPath);
        assert_eq!(Mode::from_parameters(false, false), Mode::Lanes);
        assert_eq!(Mode::from_parameters(false, true), Mode::Inline);
        assert_eq!(Mode::from_parameters(true, true), Mode::Inline);
    }

    /// The glue's rule agrees with [`Mode::decide`] for every facts word:
    /// it runs a command in the caller's thread exactly when `decide`
    /// allows it, the namespace is live, its queue is not being deleted and
    /// the word's file bit is the namespace's.
    #[test]
    fn rule_is_decide() {
        let all = raw::NVMET_CGROUP_F_THROTTLE << 1;
        for mode in [Mode::Lanes, Mode::FastPath, Mode::Inline] {
            for file in [false, true] {
                let rule = mode.rule(file);
                for f in 0..all {
                    let facts = Facts::from_glue(f);
                    let state = facts.state();
                    let expected = mode.decide(&facts).is_ok()
                        && state.ns_live
                        && !state.sq_dying
                        && facts.file() == file;
                    assert_eq!(rule.matches(f), expected);
                }
            }
        }
    }

    /// Only the fast path's rule for a block device's namespace is plain,
    /// and for every facts word such a namespace's commands can have on a
    /// blk-mq queue (its file bit clear, its blk-mq bit set iff its queue
    /// is live), the glue's plain test allows exactly what the rule does.
    #[test]
    fn plain_is_rule() {
        let all = raw::NVMET_CGROUP_F_THROTTLE << 1;
        let live = raw::NVMET_CGROUP_F_QUEUE_LIVE;
        let blk_mq = raw::NVMET_CGROUP_F_BLK_MQ;
        for mode in [Mode::Lanes, Mode::FastPath, Mode::Inline] {
            for file in [false, true] {
                let plain = mode == Mode::FastPath && !file;
                assert_eq!(mode.rule(file).is_plain(), plain);
            }
        }
        let rule = Mode::FastPath.rule(false);
        let on_blk_mq =
            |f: &u32| f & raw::NVMET_CGROUP_F_FILE == 0 && (f & live == 0) == (f & blk_mq == 0);
        for f in (0..all).filter(on_blk_mq) {
            assert_eq!(plain_allows(f), rule.matches(f));
        }
    }
}
