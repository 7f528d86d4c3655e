//! `clear_output()` reaches the frontend's sink with its `wait` flag.
use crate::eval::session::{DisplayData, OutputSink, Session, SessionConfig};

/// Records clear_output calls, which the collecting `Vec<Output>` sink ignores.
#[derive(Default)]
struct Clears(Vec<bool>);

impl OutputSink for Clears {
    fn stdout(&mut self, _text: &str) {}
    fn stderr(&mut self, _text: &str) {}
    fn display(&mut self, _data: &DisplayData, _is_result: bool) {}
    fn clear_output(&mut self, wait: bool) {
        self.0.push(wait);
    }
}

#[test]
fn clear_output_reaches_the_sink_with_its_wait_flag() {
    let mut session = Session::new(SessionConfig::default());
    let mut sink = Clears::default();
    let run = session.eval_with(
        "clear_output()\nclear_output(wait=True)\nclear_output(True)",
        &mut sink,
    );
    assert!(run.is_ok(), "{run:?}");
    assert_eq!(sink.0, vec![false, true, true]);
}

#[test]
fn clear_output_rejects_extra_arguments() {
    let mut session = Session::new(SessionConfig::default());
    let error = session.eval("clear_output(1, 2)").error;
    assert_eq!(error.map(|e| e.ename), Some("TypeError".to_string()));
}
