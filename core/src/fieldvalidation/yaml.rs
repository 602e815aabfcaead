//! Duplicate keys in a YAML body, with the line kube's YAML decoder names:
//! `line 12: key "paused" already set in map`. serde_yaml gives no
//! positions, so this walks yaml-rust2's marked events instead.

use super::Issue;
use crate::status::go_quote;
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

/// Every repeated key of every mapping, in document order. A body that
/// does not parse yields nothing here; the real decoder reports it.
pub fn duplicate_keys(body: &str) -> Vec<Issue> {
    let mut scan = Scan::default();
    let mut parser = Parser::new_from_str(body);
    if parser.load(&mut scan, true).is_err() {
        return Vec::new();
    }
    scan.found
}

enum Frame {
    Map { keys: Vec<String>, want_key: bool },
    Seq,
}

#[derive(Default)]
struct Scan {
    stack: Vec<Frame>,
    found: Vec<Issue>,
}

impl Scan {
    /// A node finished; in a mapping, a finished value means a key is next.
    fn done(&mut self) {
        if let Some(Frame::Map { want_key, .. }) = self.stack.last_mut() {
            *want_key = !*want_key;
        }
    }
}

impl MarkedEventReceiver for Scan {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        match ev {
            Event::Scalar(s, ..) => {
                if let Some(Frame::Map {
                    keys,
                    want_key: true,
                }) = self.stack.last_mut()
                {
                    if keys.contains(&s) {
                        self.found.push(Issue::YamlDuplicate(format!(
                            "line {}: key {} already set in map",
                            mark.line(),
                            go_quote(&s)
                        )));
                    } else {
                        keys.push(s);
                    }
                }
                self.done();
            }
            Event::Alias(_) => self.done(),
            Event::MappingStart(..) => self.stack.push(Frame::Map {
                keys: Vec::new(),
                want_key: true,
            }),
            Event::SequenceStart(..) => self.stack.push(Frame::Seq),
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
                self.done();
            }
            _ => {}
        }
    }
}
