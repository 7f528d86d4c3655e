//! A scripted stand-in for the evaluator, so frontend tests assert exact
//! output without depending on the interpreter.

use super::Evaluator;
use crate::eval::session::{Completeness, DisplayData, EvalError, InterruptHandle, OutputSink};

#[derive(Debug, Default)]
pub struct FakeEvaluator {
    /// Every source handed to `eval_with`, in order.
    pub ran: Vec<String>,
    pub interrupt: InterruptHandle,
}

impl Evaluator for FakeEvaluator {
    /// `boom` fails, `print('a', end='')` prints without a newline, block
    /// statements print nothing, anything else displays its own text.
    fn eval_with(&mut self, code: &str, sink: &mut dyn OutputSink) -> Result<(), EvalError> {
        self.ran.push(code.to_string());
        let text = code.trim_end();
        if text == "boom" {
            return Err(EvalError {
                ename: "ValueError".into(),
                evalue: "boom was asked for".into(),
                frames: Vec::new(),
                chained: None,
            });
        }
        if text == "print('a', end='')" {
            sink.stdout("a");
        } else if !text.ends_with(':') && !text.contains('\n') {
            sink.display(
                &DisplayData {
                    plain: text.to_string(),
                    html: None,
                    ..Default::default()
                },
                true,
            );
        }
        Ok(())
    }

    fn is_complete(&self, code: &str) -> Completeness {
        let last = code.lines().last().unwrap_or("");
        if last.trim_end().ends_with(':') {
            let indent = &last[..last.len() - last.trim_start().len()];
            Completeness::Incomplete {
                indent: format!("{indent}    "),
            }
        } else {
            Completeness::Complete
        }
    }

    fn interrupt_handle(&self) -> InterruptHandle {
        self.interrupt.clone()
    }
}
