use benefits_qa::answer::{Reply, answer, plan};

#[test]
fn a_question_mark_does_not_hide_the_last_word() {
    let standard = plan("standard").expect("plan");
    let Reply::Answer {
        passage, citation, ..
    } = answer(standard, "What about vision?")
    else {
        panic!("`What about vision?` found no passage");
    };
    assert_eq!(passage.section, "4.2");
    assert_eq!(citation, "Standard plan, §4.2 Vision care");
}
