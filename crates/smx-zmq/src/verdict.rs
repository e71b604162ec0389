//! What a ZeroMQ box's books say about its link, in one word and a few sentences.
//!
//! Every report row of a ZeroMQ box carries a `verdict` and the `problems` behind it, so that a
//! script can tell a clean link from one whose figures cannot be published as they are, without
//! reading the counters itself:
//!
//! | verdict | meaning |
//! |---|---|
//! | `ok` | everything sent was delivered, and the books are exact |
//! | `lossy` | messages were lost (HWM drops, slow joiner, in transit), every one of them accounted for exactly |
//! | `incomplete` | the stream did not end as planned: nothing delivered or received, an abort, an end by timeout (tail unknown), a dropped connection, receivers that did not confirm the end |
//! | `suspect` | frames no honest sender sends arrived: corrupt or impossible frames, duplicates, inconsistent books, conflicting end markers, more senders than expected |
//!
//! The words are ordered: a row takes the worst that applies. A peer a receiver refused at the
//! handshake (wrong CURVE keys: a second run of the same deployment, a stranger) leaves the
//! verdict alone: nothing it sent reached the books, and the figures of the peers that passed
//! are whole. It is listed among the `problems`, and `smxrun` says it on stderr.

use smx_box::Stats;

/// The verdict of one link, worst last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Ok,
    Lossy,
    Incomplete,
    Suspect,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Lossy => "lossy",
            Verdict::Incomplete => "incomplete",
            Verdict::Suspect => "suspect",
        }
    }
}

/// Collects the problems of a row and the verdict they add up to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Findings {
    verdict: Verdict,
    problems: Vec<String>,
    /// Problems of the link that leave its books as they are (listed with the others).
    notices: Vec<String>,
}

impl Default for Findings {
    fn default() -> Self {
        Findings {
            verdict: Verdict::Ok,
            problems: Vec::new(),
            notices: Vec::new(),
        }
    }
}

impl Findings {
    /// Adds a problem of the given weight.
    pub fn add(&mut self, verdict: Verdict, problem: impl Into<String>) {
        self.verdict = self.verdict.max(verdict);
        self.problems.push(problem.into());
    }

    /// Adds a problem that the books do not show, so it leaves the verdict alone: a peer that
    /// failed the handshake with a receiver sent nothing that reached it, and the figures of
    /// the senders that passed are whole, but the user must hear of the knock.
    pub fn notice(&mut self, problem: impl Into<String>) {
        self.notices.push(problem.into());
    }

    pub fn verdict(&self) -> Verdict {
        self.verdict
    }

    /// The problems, those that leave the verdict alone last.
    pub fn problems(&self) -> Vec<String> {
        self.problems.iter().chain(&self.notices).cloned().collect()
    }

    /// `row` with `verdict` and `problems` (joined by "; ") added.
    pub fn write_to(&self, row: Stats) -> Stats {
        row.with("verdict", self.verdict.as_str())
            .with("problems", self.problems().join("; "))
    }

    /// For the text report's line: the verdict and its problems when the row is `incomplete`
    /// or `suspect` (a `lossy` row's figures are on the line already), else the problems
    /// that leave the verdict alone, if any.
    pub fn note(&self) -> String {
        if self.verdict < Verdict::Incomplete {
            if self.notices.is_empty() {
                return String::new();
            }
            return format!("; NOTE: {}", self.notices.join("; "));
        }
        format!(
            "; {}: {}",
            self.verdict.as_str().to_uppercase(),
            self.problems().join("; ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_finding_decides() {
        let mut f = Findings::default();
        assert_eq!(f.verdict(), Verdict::Ok);
        f.add(Verdict::Incomplete, "a");
        f.add(Verdict::Lossy, "b");
        assert_eq!(f.verdict(), Verdict::Incomplete);
        let row = f.write_to(Stats::new());
        assert_eq!(row.get("verdict"), Some(&smx_box::StatValue::from("incomplete")));
        assert_eq!(row.get("problems"), Some(&smx_box::StatValue::from("a; b")));
        assert_eq!(f.note(), "; INCOMPLETE: a; b");
    }

    #[test]
    fn a_notice_is_listed_but_leaves_the_verdict_alone() {
        let mut f = Findings::default();
        f.notice("knock");
        assert_eq!(f.verdict(), Verdict::Ok);
        assert_eq!(f.note(), "; NOTE: knock");
        f.add(Verdict::Suspect, "bad");
        assert_eq!(f.problems(), ["bad", "knock"]);
        assert_eq!(f.note(), "; SUSPECT: bad; knock");
    }
}
