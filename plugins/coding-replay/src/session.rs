//! The configured run: its sessions and their cursors.

use std::collections::{HashMap, HashSet};

use agentload_sdk::live::{carry, Carry, HistoryMode, LiveSettings, Recorded, Review};
use agentload_sdk::{Config, Error, Outcome, Session as SessionPlan, Turn};

use crate::dataset::{self, Conversation};
use crate::replay::{ConversationReplay, Salt};
use crate::settings::Settings;

/// Everything `configure` set up.
#[derive(Debug)]
pub struct Run {
    conversations: Vec<ConversationReplay>,
    /// `enable_salt`: how instances' system prompts are salted.
    salt: Option<Salt>,
    sessions: Vec<Session>,
    by_id: HashMap<String, usize>,
    /// Live-reply replay's settings, when `history = "live"`.
    live: Option<LiveSettings>,
}

/// One conversation instance.
#[derive(Debug)]
struct Session {
    id: String,
    /// Index into `Run::conversations`.
    conversation: usize,
    /// 0 on the first pass, else the `__repeat_<k>` suffix.
    repeat: u32,
    cursor: Cursor,
    /// Messages in the session's last request (live-reply replay keeps them all).
    sent: usize,
    /// The review of the last reply, until the host takes it.
    review: Option<Review>,
}

#[derive(Debug, Clone, Copy)]
enum Cursor {
    NotStarted,
    /// Index of the next client turn to hand out.
    Next(usize),
    Over,
}

impl Run {
    /// Reads the settings and the granted dataset and plans the sessions.
    ///
    /// Sessions run the selected conversations in dataset order; with
    /// `num_trajectories_to_issue` above their count they are recycled in the same
    /// order. As in the reference, instance `i` (from 0) of `n` conversations is pass
    /// `i / n + 1`: pass 1 keeps the conversation id, pass `k > 1` is `<id>__repeat_<k>`.
    pub fn configure(config: &Config) -> Result<Self, Error> {
        let settings = Settings::from_config(config)?;
        let file = config
            .files
            .iter()
            .find(|file| file.name == settings.dataset)
            .ok_or_else(|| {
                let granted: Vec<&str> = config.files.iter().map(|f| f.name.as_str()).collect();
                Error::Config(format!(
                    "setting 'dataset' names '{}', but no granted file has that name (granted: [{}])",
                    settings.dataset,
                    granted.join(", ")
                ))
            })?;
        let dataset = dataset::parse(&file.file_name, &file.bytes)?;
        let conversations: Vec<ConversationReplay> =
            select(&dataset.conversations, settings.conversations.as_deref())?
                .into_iter()
                .map(|conversation| ConversationReplay::new(conversation, &settings))
                .collect();
        if settings.enable_salt {
            // As the reference: a conversation without a system prompt stops
            // the run before its first request.
            if let Some(bare) = conversations.iter().find(|c| !c.has_system()) {
                return Err(Error::Config(format!(
                    "enable_salt: conversation '{}' has no system message to salt",
                    bare.id
                )));
            }
        }
        let salt = settings.enable_salt.then_some(Salt {
            mode: settings.salt_mode,
            seed: settings.salt_seed,
        });
        let count = conversations.len();
        let instances = settings
            .num_trajectories_to_issue
            .map_or(count, |n| n as usize);
        let mut sessions = Vec::with_capacity(instances);
        let mut by_id = HashMap::with_capacity(instances);
        for instance in 0..instances {
            let conversation = instance % count;
            let pass = u32::try_from(instance / count + 1).unwrap_or(u32::MAX);
            let source = &conversations[conversation].id;
            let (id, repeat) = if pass == 1 {
                (source.clone(), 0)
            } else {
                (format!("{source}__repeat_{pass}"), pass)
            };
            if by_id.insert(id.clone(), sessions.len()).is_some() {
                return Err(Error::Config(format!(
                    "session id '{id}' would be used twice (a conversation id collides with a \
                     repeat of another)"
                )));
            }
            sessions.push(Session {
                id,
                conversation,
                repeat,
                cursor: Cursor::NotStarted,
                sent: 0,
                review: None,
            });
        }
        Ok(Self {
            conversations,
            salt,
            sessions,
            by_id,
            live: (settings.history == HistoryMode::Live).then_some(settings.live),
        })
    }

    /// The sessions in issue order.
    pub fn plans(&self) -> Vec<SessionPlan> {
        self.sessions
            .iter()
            .map(|session| {
                let turns = self.conversations[session.conversation].turn_count();
                SessionPlan::new(session.id.clone(), u32::try_from(turns).unwrap_or(u32::MAX))
            })
            .collect()
    }

    /// The first request of a session.
    pub fn start(&mut self, session_id: &str) -> Result<Turn, Error> {
        let salt = self.salt;
        let (session, conversation) = self.session(session_id)?;
        match session.cursor {
            Cursor::NotStarted => {
                session.cursor = Cursor::Next(1);
                let first = conversation.request(0, &session.id, session.repeat, salt.as_ref());
                session.sent = first.messages.len();
                Ok(first)
            }
            _ => Err(Error::Input(format!(
                "session '{session_id}' has already started"
            ))),
        }
    }

    /// The next recorded request, or `None` once every client turn was handed out.
    ///
    /// The previous turn's outcome does not matter: the recorded history is replayed
    /// whatever the model answered, and after a failure the host takes the remaining
    /// turns to record them as missing.
    pub fn next(&mut self, session_id: &str) -> Result<Option<Turn>, Error> {
        let salt = self.salt;
        let (session, conversation) = self.session(session_id)?;
        match session.cursor {
            Cursor::NotStarted => Err(Error::Input(format!(
                "session '{session_id}' has not started; call start-session first"
            ))),
            Cursor::Over => Err(Error::Input(format!("session '{session_id}' is over"))),
            Cursor::Next(index) if index < conversation.turn_count() => {
                session.cursor = Cursor::Next(index + 1);
                Ok(Some(conversation.request(
                    index,
                    &session.id,
                    session.repeat,
                    salt.as_ref(),
                )))
            }
            Cursor::Next(_) => {
                session.cursor = Cursor::Over;
                Ok(None)
            }
        }
    }

    /// Whether requests carry the model's own replies.
    pub fn is_live(&self) -> bool {
        self.live.is_some()
    }

    /// Live-reply replay's next request: the reply to the last one
    /// (`outcome`) reviewed against the recording, then carried on (or the
    /// recorded message instead, or the session ended) as the policy for
    /// its class says.
    pub fn next_live(
        &mut self,
        session_id: &str,
        outcome: &Outcome,
    ) -> Result<Option<Turn>, Error> {
        let settings = self
            .live
            .clone()
            .ok_or_else(|| Error::internal("not a live run"))?;
        let (session, conversation) = self.session(session_id)?;
        let index = match session.cursor {
            Cursor::NotStarted => {
                return Err(Error::Input(format!(
                    "session '{session_id}' has not started; call start-session first"
                )))
            }
            Cursor::Over => return Err(Error::Input(format!("session '{session_id}' is over"))),
            Cursor::Next(index) => index,
        };
        let answered = index - 1;
        let has_next = index < conversation.turn_count();
        let (results, rest) = if has_next {
            conversation.added_rows(index)
        } else {
            (&[][..], &[][..])
        };
        let recorded = Recorded {
            answer: conversation.recorded_reply(answered),
            results,
            rest,
            has_next,
            turn: conversation.turn_number(answered),
        };
        let Carry { review, messages } = carry(&settings, outcome, recorded);
        if !matches!(outcome, Outcome::Aborted) {
            session.review = Some(review);
        }
        let Some(new) = messages else {
            session.cursor = Cursor::Over;
            return Ok(None);
        };
        let keep = session.sent;
        session.sent += new.len();
        session.cursor = Cursor::Next(index + 1);
        Ok(Some(conversation.request_of(
            index,
            &session.id,
            session.repeat,
            keep,
            new,
        )))
    }

    /// The review of the session's last reply (live-reply replay), once.
    pub fn take_review(&mut self, session_id: &str) -> Option<Review> {
        let index = *self.by_id.get(session_id)?;
        self.sessions[index].review.take()
    }

    fn session(&mut self, session_id: &str) -> Result<(&mut Session, &ConversationReplay), Error> {
        let index = *self
            .by_id
            .get(session_id)
            .ok_or_else(|| Error::Input(format!("unknown session '{session_id}'")))?;
        let session = &mut self.sessions[index];
        let conversation = &self.conversations[session.conversation];
        Ok((session, conversation))
    }
}

/// The conversations to run, in dataset order.
fn select<'a>(
    conversations: &'a [Conversation],
    wanted: Option<&[String]>,
) -> Result<Vec<&'a Conversation>, Error> {
    let Some(wanted) = wanted else {
        return Ok(conversations.iter().collect());
    };
    let mut set = HashSet::with_capacity(wanted.len());
    for id in wanted {
        if !set.insert(id.as_str()) {
            return Err(Error::Config(format!(
                "setting 'conversations' lists '{id}' twice"
            )));
        }
        if !conversations.iter().any(|c| c.id == *id) {
            return Err(Error::Config(format!(
                "setting 'conversations' lists '{id}', which is not in the dataset"
            )));
        }
    }
    Ok(conversations
        .iter()
        .filter(|c| set.contains(c.id.as_str()))
        .collect())
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::fixtures::{config, jsonl, two_conversations, user};

    fn run(settings: Value) -> Run {
        Run::configure(&config(settings, &two_conversations())).unwrap()
    }

    fn plan(run: &Run) -> Vec<(String, u32)> {
        run.plans()
            .into_iter()
            .map(|p| (p.id, p.expected_turns))
            .collect()
    }

    fn invalid_input(result: Result<impl std::fmt::Debug, Error>) -> String {
        match result {
            Err(Error::Input(message)) => message,
            other => panic!("expected invalid-input, got {other:?}"),
        }
    }

    fn invalid_config(settings: Value) -> String {
        match Run::configure(&config(settings, &two_conversations())) {
            Err(Error::Config(message)) => message,
            other => panic!("expected invalid-config, got {other:?}"),
        }
    }

    #[test]
    fn one_session_per_conversation_by_default() {
        let run = run(json!({}));
        assert_eq!(plan(&run), [("a".into(), 3), ("b".into(), 3)]);
    }

    #[test]
    fn repeats_recycle_in_file_order_like_the_reference() {
        let mut run = run(json!({"num_trajectories_to_issue": 5}));
        assert_eq!(
            plan(&run),
            [
                ("a".into(), 3),
                ("b".into(), 3),
                ("a__repeat_2".into(), 3),
                ("b__repeat_2".into(), 3),
                ("a__repeat_3".into(), 3),
            ]
        );
        let repeat = |run: &mut Run, id: &str| -> Value {
            let request = run.start(id).unwrap();
            serde_json::from_str::<Value>(&request.expected_json).unwrap()["repeat"].clone()
        };
        assert_eq!(repeat(&mut run, "a"), 0);
        assert_eq!(repeat(&mut run, "b__repeat_2"), 2);
        assert_eq!(repeat(&mut run, "a__repeat_3"), 3);
    }

    #[test]
    fn fewer_trajectories_than_conversations_takes_the_first() {
        assert_eq!(
            plan(&run(json!({"num_trajectories_to_issue": 1}))),
            [("a".into(), 3)]
        );
    }

    #[test]
    fn conversations_setting_selects_in_dataset_order() {
        let run = run(json!({"conversations": ["b", "a"], "num_trajectories_to_issue": 3}));
        assert_eq!(
            plan(&run),
            [("a".into(), 3), ("b".into(), 3), ("a__repeat_2".into(), 3)]
        );
        assert_eq!(
            plan(&self::run(json!({"conversations": ["b"]}))),
            [("b".into(), 3)]
        );
        assert_eq!(
            invalid_config(json!({"conversations": ["c"]})),
            "setting 'conversations' lists 'c', which is not in the dataset"
        );
        assert_eq!(
            invalid_config(json!({"conversations": ["a", "a"]})),
            "setting 'conversations' lists 'a' twice"
        );
    }

    #[test]
    fn settings_and_file_errors() {
        let bogus = invalid_config(json!({"bogus": 1}));
        assert!(
            bogus.starts_with("settings: unknown field `bogus`"),
            "{bogus}"
        );
        assert_eq!(
            invalid_config(json!({"dataset": "other"})),
            "setting 'dataset' names 'other', but no granted file has that name \
             (granted: [trajectories])"
        );
        let bad = jsonl(&[user("a", 1), user("a", 2)]);
        match Run::configure(&config(json!({}), &bad)) {
            Err(Error::Data {
                file,
                line,
                message,
            }) => {
                assert_eq!((file.as_str(), line), ("t.jsonl", 2));
                assert!(message.contains("'user' cannot follow 'user'"), "{message}");
            }
            other => panic!("expected invalid-data, got {other:?}"),
        }
    }

    #[test]
    fn turns_are_handed_out_in_order_whatever_the_model_said() {
        let mut run = run(json!({}));
        let first = run.start("a").unwrap();
        assert_eq!(first.turn, 1);
        // The model's answer never enters the history: turn 3 carries the recorded turn 2.
        let second = run.next("a").unwrap().unwrap();
        assert_eq!(second.turn, 3);
        assert_eq!(second.keep as usize, first.messages.len());
        assert_eq!(
            second.messages[2 - first.messages.len()]
                .reasoning_content
                .as_deref(),
            Some("look first")
        );
        assert_eq!(run.next("a").unwrap().unwrap().turn, 5);
        assert!(run.next("a").unwrap().is_none());
        assert_eq!(invalid_input(run.next("a")), "session 'a' is over");
    }

    #[test]
    fn misuse_is_invalid_input() {
        let mut run = run(json!({}));
        assert_eq!(invalid_input(run.start("zz")), "unknown session 'zz'");
        assert_eq!(invalid_input(run.next("zz")), "unknown session 'zz'");
        assert_eq!(
            invalid_input(run.next("a")),
            "session 'a' has not started; call start-session first"
        );
        run.start("a").unwrap();
        assert_eq!(
            invalid_input(run.start("a")),
            "session 'a' has already started"
        );
    }
}
