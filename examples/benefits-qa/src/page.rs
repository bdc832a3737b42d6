//! The pages a person sees: the question form, the answer with its passage quoted and cited, a refusal,
//! and the plan's passages.

use crate::answer::{PLANS, Plan, Reply};

/// Text made safe inside HTML.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn layout(title: &str, body: &str) -> String {
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title} — Benefits Q&amp;A</title>
<style>
body {{ font-family: "Liberation Sans", sans-serif; margin: 2rem auto; max-width: 46rem; color: #1b1b1b; }}
nav a {{ margin-right: 1rem; }}
form {{ display: grid; gap: .5rem; margin: 1rem 0; }}
textarea {{ font: inherit; min-height: 3rem; }}
blockquote {{ border-left: 4px solid #2b6cb0; margin: .5rem 0; padding: .25rem 1rem; background: #f0f5fb; }}
[role=alert] {{ border: 2px solid #b7791f; padding: .5rem 1rem; background: #fffaf0; }}
</style>
</head>
<body>
<header><h1>Benefits Q&amp;A</h1>
<nav aria-label="Site"><a href="/">Home</a><a href="/plans?plan=standard">Standard plan</a><a href="/plans?plan=plus">Plus plan</a></nav>
</header>
<main>
{body}
</main>
</body>
</html>
"#
    )
}

fn form(question: &str, plan: &Plan) -> String {
    let options: String = PLANS
        .iter()
        .map(|p| {
            let selected = if p.id == plan.id { " selected" } else { "" };
            format!(r#"<option value="{}"{selected}>{}</option>"#, p.id, p.name)
        })
        .collect();
    format!(
        r#"<section aria-label="Ask a question">
<h2>Ask about your plan</h2>
<form method="get" action="/ask">
<label for="plan">Plan</label>
<select id="plan" name="plan">{options}</select>
<label for="question">Your question</label>
<textarea id="question" name="q" onkeydown="if (event.key === 'Enter' && !event.shiftKey) {{ event.preventDefault(); this.form.submit(); }}">{}</textarea>
<button type="submit">Ask</button>
</form>
</section>"#,
        escape(question)
    )
}

/// The home page: the question form.
pub fn home(plan: &Plan) -> String {
    layout("Ask a question", &form("", plan))
}

/// The page after a question: the form again, then the answer, a refusal, or nothing found.
pub fn reply(question: &str, plan: &Plan, reply: &Reply) -> String {
    let shown = match reply {
        Reply::Answer {
            passage, citation, ..
        } => format!(
            r#"<section aria-label="Answer" data-testid="answer">
<h2>Answer</h2>
<p>From your plan document:</p>
<blockquote data-testid="passage">{}</blockquote>
<p>Source: <cite data-testid="citation">{}</cite></p>
</section>"#,
            escape(passage.text),
            escape(citation)
        ),
        Reply::Refused { reason, .. } => format!(
            r#"<p role="alert" data-testid="refusal">{}</p>"#,
            escape(reason)
        ),
        Reply::NotFound { plan } => format!(
            r#"<p data-testid="not-found">No passage of the {} answers that question. Try other words.</p>"#,
            escape(plan)
        ),
    };
    layout("Answer", &format!("{}\n{shown}", form(question, plan)))
}

/// Every passage of a plan, as a list.
pub fn passages(plan: &Plan) -> String {
    let items: String = plan
        .passages
        .iter()
        .map(|p| {
            format!(
                r#"<li data-testid="passage-item"><strong>§{} {}</strong> — {}</li>"#,
                p.section,
                escape(p.title),
                escape(p.text)
            )
        })
        .collect();
    layout(
        plan.name,
        &format!(
            r#"<section aria-label="{} passages" data-testid="passage-list">
<h2>{} passages</h2>
<ul>{items}</ul>
</section>"#,
            plan.name, plan.name
        ),
    )
}
