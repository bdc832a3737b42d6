//! Answering a question: refuse first, then look the passages up.

use serde::Serialize;

/// One passage of a plan document.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Passage {
    /// The section number, as cited: `2.1`.
    pub section: &'static str,
    pub title: &'static str,
    pub text: &'static str,
}

/// A plan and its passages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    pub id: &'static str,
    pub name: &'static str,
    pub passages: &'static [Passage],
}

pub const PLANS: [Plan; 2] = [
    Plan {
        id: "standard",
        name: "Standard plan",
        passages: &[
            Passage {
                section: "2.1",
                title: "Dental cleanings",
                text: "Two dental cleanings per plan year are covered in full when an in-network dentist does them.",
            },
            Passage {
                section: "3.4",
                title: "Physical therapy",
                text: "Physical therapy is covered for up to 20 visits per plan year after the deductible.",
            },
            Passage {
                section: "4.2",
                title: "Vision care",
                text: "One eye exam every 12 months is covered; frames and lenses up to $150 every 24 months.",
            },
            Passage {
                section: "5.1",
                title: "Dependent children",
                text: "A child may stay on the plan until the end of the month in which they turn 26.",
            },
            Passage {
                section: "6.3",
                title: "Claims deadline",
                text: "Claims must be filed within 90 days of the date of service.",
            },
        ],
    },
    Plan {
        id: "plus",
        name: "Plus plan",
        passages: &[
            Passage {
                section: "2.1",
                title: "Dental cleanings",
                text: "Three dental cleanings per plan year are covered in full at any licensed dentist.",
            },
            Passage {
                section: "3.4",
                title: "Physical therapy",
                text: "Physical therapy is covered for up to 30 visits per plan year, with no deductible.",
            },
            Passage {
                section: "4.2",
                title: "Vision care",
                text: "One eye exam every 12 months is covered; frames and lenses up to $300 every 12 months.",
            },
            Passage {
                section: "5.1",
                title: "Dependent children",
                text: "A child may stay on the plan until the end of the month in which they turn 26.",
            },
            Passage {
                section: "6.3",
                title: "Claims deadline",
                text: "Claims must be filed within 180 days of the date of service.",
            },
        ],
    },
];

/// What the app says to a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Reply {
    /// The passage that answers it, quoted, and its citation.
    Answer {
        plan: &'static str,
        passage: Passage,
        citation: String,
    },
    /// A question it will not answer, and why; no passage was looked up.
    Refused {
        reason: &'static str,
        looked_up: bool,
    },
    /// No passage answers it.
    NotFound { plan: &'static str },
}

pub const OTHER_PERSON: &str =
    "I can only answer questions about the plan's rules, not about another person's records.";
pub const ADVICE: &str =
    "I can't give advice on what to choose; I can quote what each plan covers.";

/// The plan with this id.
pub fn plan(id: &str) -> Option<&'static Plan> {
    PLANS.iter().find(|p| p.id == id)
}

/// Answers `question` from `plan`'s passages: refusals are decided before any lookup.
pub fn answer(plan: &'static Plan, question: &str) -> Reply {
    if let Some(reason) = refusal(question) {
        return Reply::Refused {
            reason,
            looked_up: false,
        };
    }
    let words = words(question);
    let best = plan
        .passages
        .iter()
        .map(|p| {
            let text = format!("{} {}", p.title, p.text);
            let passage_words = words_of(&text);
            let score = words
                .iter()
                .filter(|w| w.len() > 3 && passage_words.contains(w))
                .count();
            (score, p)
        })
        .filter(|(score, _)| *score > 0)
        .max_by_key(|(score, _)| *score);
    match best {
        Some((_, passage)) => Reply::Answer {
            plan: plan.name,
            passage: *passage,
            citation: format!("{}, §{} {}", plan.name, passage.section, passage.title),
        },
        None => Reply::NotFound { plan: plan.name },
    }
}

/// Why a question is refused before any lookup: it asks about another person's records, or for advice.
pub fn refusal(question: &str) -> Option<&'static str> {
    let q = question.to_lowercase();
    let other = [
        "my wife's",
        "my husband's",
        "my spouse's",
        "my partner's",
        "my colleague's",
        "my coworker's",
        "someone else's",
        "another employee",
        "another person",
        "his claims",
        "her claims",
        "their claims",
        "his records",
        "her records",
    ];
    if other.iter().any(|o| q.contains(o)) {
        return Some(OTHER_PERSON);
    }
    let advice = [
        "should i",
        "which plan is better",
        "recommend",
        "what would you choose",
        "is it worth",
    ];
    if advice.iter().any(|a| q.contains(a)) {
        return Some(ADVICE);
    }
    None
}

/// The words of a question, lower-cased, punctuation aside (`vision?` is `vision`).
fn words(text: &str) -> Vec<String> {
    words_of(text)
}

/// The words of a passage, lower-cased, punctuation aside.
fn words_of(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_come_before_any_lookup() {
        let standard = plan("standard").expect("plan");
        assert_eq!(
            answer(
                standard,
                "How many dental cleanings did my wife's dentist bill"
            ),
            Reply::Refused {
                reason: OTHER_PERSON,
                looked_up: false
            }
        );
        assert_eq!(
            answer(standard, "Should I take the Plus plan for physical therapy"),
            Reply::Refused {
                reason: ADVICE,
                looked_up: false
            }
        );
    }

    #[test]
    fn the_best_passage_is_cited() {
        let plus = plan("plus").expect("plan");
        let Reply::Answer {
            citation, passage, ..
        } = answer(plus, "How many physical therapy visits")
        else {
            panic!("no answer");
        };
        assert_eq!(passage.section, "3.4");
        assert_eq!(citation, "Plus plan, §3.4 Physical therapy");
    }
}
