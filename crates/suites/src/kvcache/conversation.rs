//! The conversations' turn keys, shared by the users' side and the workers as
//! kv-cache.py's `ConversationManager` shares them: [`Conversations`] holds each
//! conversation's keys, at most [`MAX_CONVERSATIONS`] of them (the least recently
//! added-to evicted first), and gives a turn the keys it reads back when it is served.

use std::collections::HashMap;
use std::sync::Mutex;

/// config.yaml's `conversation.max_conversations` (kv-cache.py's `ConversationManager()`
/// takes it from there; its `--max-conversations` feeds only the ShareGPT loader).
pub const MAX_CONVERSATIONS: usize = 1000;

/// A conversation: its user and its number among that user's conversations.
pub type ConversationId = (u32, u64);

struct Conversation {
    keys: Vec<String>,
    /// When a turn was last added (the table's count of additions): the LRU order.
    last: u64,
}

#[derive(Default)]
struct Table {
    held: HashMap<ConversationId, Conversation>,
    tick: u64,
    counts: ConversationCounts,
}

/// What the table did over a trial (stored with the trial: the table's behaviour over a
/// long run is read off these).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConversationCounts {
    /// Conversations started.
    pub started: u64,
    /// Conversations the table let go to hold a new one (least recently added to first).
    pub evicted: u64,
    /// Turns issued in a conversation already evicted (kv-cache.py's `add_turn` raises
    /// there and that user's thread ends; iolab's turn reads nothing back).
    pub lost_turns: u64,
    /// The most conversations held at once.
    pub most_held: u64,
}

impl ConversationCounts {
    /// Every rank's counts as one (`most_held` the largest rank's).
    pub fn add(&mut self, o: &ConversationCounts) {
        self.started += o.started;
        self.evicted += o.evicted;
        self.lost_turns += o.lost_turns;
        self.most_held = self.most_held.max(o.most_held);
    }
}

/// The conversations' turn keys.
pub struct Conversations {
    table: Mutex<Table>,
    capacity: usize,
}

impl Default for Conversations {
    fn default() -> Self {
        Conversations::new(MAX_CONVERSATIONS)
    }
}

impl Conversations {
    pub fn new(capacity: usize) -> Conversations {
        Conversations {
            table: Mutex::default(),
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts conversation `id`; when the table is full the conversation a turn was
    /// added to least recently leaves it first (`_evict_oldest_conversation`: its
    /// queued turns then read nothing back).
    pub fn start(&self, id: ConversationId) {
        let mut t = self.lock();
        if t.held.len() >= self.capacity {
            let oldest = t.held.iter().min_by_key(|(_, c)| c.last).map(|(k, _)| *k);
            if let Some(k) = oldest {
                t.held.remove(&k);
                t.counts.evicted += 1;
            }
        }
        t.tick += 1;
        let last = t.tick;
        t.held.insert(
            id,
            Conversation {
                keys: Vec::new(),
                last,
            },
        );
        t.counts.started += 1;
        t.counts.most_held = t.counts.most_held.max(t.held.len() as u64);
    }

    /// Adds a turn's key to conversation `id`; nothing if it was evicted (where
    /// kv-cache.py's `add_turn` raises and that user's thread ends: with a thousand
    /// conversations held, only when a thousand start within one user's think time).
    pub fn add_turn(&self, id: ConversationId, key: &str) {
        let mut t = self.lock();
        t.tick += 1;
        let last = t.tick;
        if let Some(c) = t.held.get_mut(&id) {
            c.keys.push(key.to_string());
            c.last = last;
        } else {
            t.counts.lost_turns += 1;
        }
    }

    /// The keys turn `turn` (key `key`) of conversation `id` reads back when it is
    /// served, as `get_all_previous_turn_keys` gives them then: every other turn the
    /// conversation holds, so with an open loop also later turns already issued (not yet
    /// written: misses); none for a first turn or a conversation evicted since.
    pub fn read_back(&self, id: ConversationId, turn: u32, key: &str) -> Vec<String> {
        if turn <= 1 {
            return Vec::new();
        }
        let t = self.lock();
        t.held.get(&id).map_or_else(Vec::new, |c| {
            c.keys.iter().filter(|k| *k != key).cloned().collect()
        })
    }

    /// What the table did so far.
    pub fn counts(&self) -> ConversationCounts {
        self.lock().counts
    }

    /// Conversations held.
    pub fn len(&self) -> usize {
        self.lock().held.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_reads_back_every_other_turn_held_when_served() {
        let c = Conversations::default();
        c.start((0, 1));
        for t in 1..=3 {
            c.add_turn((0, 1), &format!("conv_user_0000_1_turn_{t}"));
        }
        // A first turn reads nothing back, whatever followed it.
        assert!(c.read_back((0, 1), 1, "conv_user_0000_1_turn_1").is_empty());
        // Turn 2 served after turn 3 was issued looks turn 3 up too.
        assert_eq!(
            c.read_back((0, 1), 2, "conv_user_0000_1_turn_2"),
            ["conv_user_0000_1_turn_1", "conv_user_0000_1_turn_3"]
        );
    }

    #[test]
    fn the_conversation_added_to_least_recently_is_evicted_first() {
        let c = Conversations::new(2);
        c.start((0, 1));
        c.add_turn((0, 1), "a1");
        c.start((1, 1));
        c.add_turn((1, 1), "b1");
        c.add_turn((0, 1), "a2");
        // (1, 1) was added to last before (0, 1)'s second turn: it leaves.
        c.start((2, 1));
        assert_eq!(c.len(), 2);
        c.add_turn((1, 1), "b2");
        assert_eq!(c.len(), 2);
        assert_eq!(c.read_back((0, 1), 2, "a2"), ["a1"]);
        // Its turns, queued or issued later, read nothing back.
        assert!(c.read_back((1, 1), 2, "b2").is_empty());
        // Three started, one let go, one turn issued after it was; never more than two.
        let n = c.counts();
        assert_eq!(
            (n.started, n.evicted, n.lost_turns, n.most_held),
            (3, 1, 1, 2)
        );
    }
}
