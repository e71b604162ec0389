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
//! The words are ordered: a row takes the worst that applies.

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
}

impl Default for Findings {
    fn default() -> Self {
        Findings {
            verdict: Verdict::Ok,
            problems: Vec::new(),
        }
    }
}

impl Findings {
    /// Adds a problem of the given weight.
    pub fn add(&mut self, verdict: Verdict, problem: impl Into<String>) {
        self.verdict = self.verdict.max(verdict);
        self.problems.push(problem.into());
    }

    pub fn verdict(&self) -> Verdict {
        self.verdict
    }

    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// `row` with `verdict` and `problems` (joined by "; ") added.
    pub fn write_to(&self, row: Stats) -> Stats {
        row.with("verdict", self.verdict.as_str())
            .with("problems", self.problems.join("; "))
    }

    /// For the text report's line: the verdict and its problems when the row is `incomplete`
    /// or `suspect` (a `lossy` row's figures are on the line already).
    pub fn note(&self) -> String {
        if self.verdict < Verdict::Incomplete {
            return String::new();
        }
        format!(
            "; {}: {}",
            self.verdict.as_str().to_uppercase(),
            self.problems.join("; ")
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
}
