//! The simulated users and the requests they issue, as kv-cache.py's workload.py and
//! benchmark.py `user_worker` make them: [`User`] (a template's context, generation and
//! think-time ranges, a QoS class), [`UserState`] (its conversation), [`Request`].
//! Pure and seeded: the same seed gives the same users and the same request stream.

use iolab_core::rng::{PyRandom, Rng, mix};
use iolab_core::units::Nanos;

use super::conversation::{ConversationId, Conversations};

/// kv-cache.py's QoS classes: interactive (priority 3), responsive (2), batch (1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Qos {
    Batch = 1,
    Responsive = 2,
    Interactive = 3,
}

impl Qos {
    pub fn name(self) -> &'static str {
        match self {
            Qos::Interactive => "interactive",
            Qos::Responsive => "responsive",
            Qos::Batch => "batch",
        }
    }
}

/// A user's fixed profile (drawn once, at the start).
#[derive(Clone, Debug, PartialEq)]
pub struct User {
    pub index: u32,
    pub context: u64,
    pub generation: u64,
    /// Think time between two requests, before the ±20 % of each wait.
    pub think: Nanos,
    pub qos: Qos,
}

/// config.yaml's user_templates: context, generation and think-time (ms) ranges.
/// An inclusive range of a template.
type Span = (u64, u64);

const TEMPLATES: [(Span, Span, Span); 3] = [
    ((512, 4096), (50, 200), (100, 500)),     // chatbot
    ((4096, 25000), (100, 500), (200, 1000)), // coding
    ((4096, 16384), (200, 800), (300, 1500)), // document
];

/// A context at or above this many tokens is prefill only (no decode reads).
pub const PREFILL_ONLY_FROM: u64 = 10_000;

/// A conversation ends with this probability before each request (kv-cache.py hard-codes
/// `random() >= 0.8`), or after this many turns.
const END_CONVERSATION_PERCENT: u8 = 20;
const MAX_TURNS: u32 = 50;

fn between(rng: &mut Rng, lo: u64, hi: u64) -> u64 {
    lo + rng.below(hi - lo + 1)
}

/// A uniform float in [0, 1).
pub fn unit(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// The users of one rank, drawn from `seed` as kv-cache.py's `generate_mixed_users`
/// draws them after `random.seed(seed)` (CPython's `random`, draw for draw: a template
/// by `choice`, the QoS class by `random()`: 15 % interactive, 35 % responsive, 50 %
/// batch; context and generation by `randint`, the think time by `uniform`), so rank 0's
/// users are the reference's for the same seed.
pub fn users(count: u32, seed: u64) -> Vec<User> {
    let mut py = PyRandom::new(seed);
    (0..count)
        .map(|index| {
            let (c, g, t) = TEMPLATES[py.below(3) as usize];
            let r = py.random();
            let qos = if r < 0.15 {
                Qos::Interactive
            } else if r < 0.50 {
                Qos::Responsive
            } else {
                Qos::Batch
            };
            let context = py.randint(c.0, c.1);
            let generation = py.randint(g.0, g.1);
            let think_s = py.uniform(t.0 as f64 / 1e3, t.1 as f64 / 1e3);
            User {
                index,
                context,
                generation,
                think: Nanos((think_s * 1e9) as u64),
                qos,
            }
        })
        .collect()
}

/// One request, as a worker takes it from the queue.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub user: u32,
    pub qos: Qos,
    pub context_tokens: u64,
    pub generate_tokens: u64,
    /// The cache entry its prefill writes.
    pub key: String,
    /// Its conversation and its turn there (multi-turn only).
    pub conversation: Option<(ConversationId, u32)>,
    /// The other turns of its conversation, read back before the prefill: filled when
    /// a worker takes it ([`Conversations::read_back`]).
    pub previous: Vec<String>,
    /// A system prompt's prefix looked up first: its key and tokens.
    pub prefix: Option<(&'static str, u64)>,
    /// When it was issued (queue wait and end-to-end latency start here).
    pub issued: Nanos,
    /// Its place in the issue order (FIFO within a QoS class).
    pub seq: u64,
}

impl Request {
    /// Prefill and decode (a short context), or prefill only.
    pub fn decodes(&self) -> bool {
        self.context_tokens < PREFILL_ONLY_FROM
    }
}

/// A user's place in its conversations, and its random stream.
pub struct UserState {
    pub user: User,
    rng: Rng,
    multi_turn: bool,
    prefix_caching: bool,
    conversations: u64,
    requests: u64,
    /// The current conversation's turns so far.
    turns: u32,
}

impl UserState {
    pub fn new(user: User, seed: u64, multi_turn: bool, prefix_caching: bool) -> UserState {
        let rng = Rng::new(mix(&[seed, u64::from(user.index), 0x7265_7173]));
        UserState {
            user,
            rng,
            multi_turn,
            prefix_caching,
            conversations: 0,
            requests: 0,
            turns: 0,
        }
    }

    /// The wait before this user's next request: think time x uniform(0.8, 1.2).
    pub fn next_wait(&mut self) -> Nanos {
        let f = 0.8 + 0.4 * unit(&mut self.rng);
        Nanos((self.user.think.0 as f64 * f) as u64)
    }

    /// The user's next request, issued at `issued`; its turn is added to its
    /// conversation in `conversations`.
    pub fn next_request(
        &mut self,
        issued: Nanos,
        seq: u64,
        conversations: &Conversations,
    ) -> Request {
        let u = self.user.clone();
        let name = format!("user_{:04}", u.index);
        let conversation = self.multi_turn.then(|| {
            let ends = self.turns > 0
                && (self.rng.percent(END_CONVERSATION_PERCENT) || self.turns >= MAX_TURNS);
            if self.turns == 0 || ends {
                self.turns = 0;
                self.conversations += 1;
                conversations.start((u.index, self.conversations));
            }
            self.turns += 1;
            ((u.index, self.conversations), self.turns)
        });
        let key = match conversation {
            Some(((_, n), turn)) => format!("conv_{name}_{n}_turn_{turn}"),
            None => format!("{name}_req_{:06}", self.requests),
        };
        if let Some((id, _)) = conversation {
            conversations.add_turn(id, &key);
        }
        self.requests += 1;
        let context_tokens = between(&mut self.rng, (u.context / 4).max(1), u.context);
        let generate_tokens = between(&mut self.rng, (u.generation / 4).max(1), u.generation);
        let prefix = if self.prefix_caching {
            self.system_prompt()
        } else {
            None
        };
        Request {
            user: u.index,
            qos: u.qos,
            context_tokens,
            generate_tokens,
            key,
            conversation,
            previous: Vec::new(),
            prefix,
            issued,
            seq,
        }
    }

    /// A system-prompt prefix for the next request, with kv-cache.py's probability
    /// (0.2): its key and token count (the prompt's words: 5, 9 or 5).
    fn system_prompt(&mut self) -> Option<(&'static str, u64)> {
        const PROMPTS: [(&str, u64); 3] = [
            ("kv_system_helpful", 5),
            ("kv_system_coding", 9),
            ("kv_system_analysis", 5),
        ];
        (unit(&mut self.rng) < 0.2).then(|| PROMPTS[self.rng.below(3) as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_are_drawn_from_the_templates_and_the_seed() {
        let a = users(50, 42);
        assert_eq!(a, users(50, 42));
        assert_ne!(a, users(50, 43));
        for u in &a {
            assert!((512..=25_000).contains(&u.context), "{u:?}");
            assert!((50..=800).contains(&u.generation), "{u:?}");
            assert!(u.think >= Nanos(100_000_000) && u.think <= Nanos(1_500_000_000));
        }
        assert!(a.iter().any(|u| u.qos == Qos::Batch));
    }

    /// kv-cache.py's users for `--seed 42 --num-users 8` (its log: contexts 3,283 to
    /// 16,545 tokens, mean 8,633; 4 interactive, 1 responsive, 3 batch), as CPython
    /// draws them.
    #[test]
    fn the_users_of_a_seed_are_kv_cache_pys() {
        let u = users(8, 42);
        let context: Vec<u64> = u.iter().map(|u| u.context).collect();
        assert_eq!(context, [16245, 3283, 7166, 7353, 4308, 8648, 16545, 5519]);
        let generation: Vec<u64> = u.iter().map(|u| u.generation).collect();
        assert_eq!(generation, [481, 189, 211, 758, 488, 359, 149, 473]);
        // document's think time, uniform(0.3, 1.5) s: 0.5938702245641714.
        assert_eq!(u[0].think, Nanos(593_870_224));
        let interactive = u.iter().filter(|u| u.qos == Qos::Interactive).count();
        let responsive = u.iter().filter(|u| u.qos == Qos::Responsive).count();
        assert_eq!((interactive, responsive), (4, 1));
    }

    #[test]
    fn a_turn_served_at_once_reads_back_its_earlier_turns() {
        let u = users(1, 1).remove(0);
        let mut s = UserState::new(u, 1, true, true);
        let table = Conversations::default();
        let mut seen = Vec::new();
        for i in 0..40 {
            let r = s.next_request(Nanos(i), i, &table);
            let (id, turn) = r.conversation.unwrap();
            if turn == 1 {
                assert!(r.key.ends_with("_turn_1"));
                seen.clear();
            }
            assert_eq!(table.read_back(id, turn, &r.key), seen, "{}", r.key);
            seen.push(r.key.clone());
        }
    }

    /// Each request's draws have kv-cache.py's distributions (`user_worker`): context
    /// uniform in [L/4, L], generated tokens in [G/4, G], a conversation ending with
    /// probability 0.2 before each later request, a system prompt looked up with
    /// probability 0.2 (`detect_system_prompt`), the wait think x uniform(0.8, 1.2). The
    /// reference draws them from one `random` its threads share, so its sequences
    /// differ from run to run; per-request logs of both tools (8 users, seed 42, 20 s,
    /// ~370 requests each) agreed on these means within their sampling spread.
    #[test]
    fn the_draws_of_a_request_have_the_references_distributions() {
        let table = Conversations::default();
        for u in users(8, 42) {
            let (l, g, think) = (u.context, u.generation, u.think.0 as f64);
            let mut s = UserState::new(u, 42, true, true);
            let n = 4000;
            let (mut ctx, mut generated, mut first, mut prefix, mut wait) = (0, 0, 0, 0, 0.0);
            for i in 0..n {
                let r = s.next_request(Nanos(i), i, &table);
                assert!((l / 4..=l).contains(&r.context_tokens), "{r:?}");
                assert!((g / 4..=g).contains(&r.generate_tokens), "{r:?}");
                ctx += r.context_tokens;
                generated += r.generate_tokens;
                first += u64::from(r.conversation.unwrap().1 == 1);
                prefix += u64::from(r.prefix.is_some());
                wait += s.next_wait().0 as f64;
            }
            let near = |got: f64, want: f64, tol: f64| {
                assert!((got / want - 1.0).abs() < tol, "{got} against {want}");
            };
            near(ctx as f64 / n as f64, (l / 4 + l) as f64 / 2.0, 0.02);
            near(generated as f64 / n as f64, (g / 4 + g) as f64 / 2.0, 0.02);
            near(first as f64 / n as f64, 0.2, 0.1);
            near(prefix as f64 / n as f64, 0.2, 0.1);
            near(wait / n as f64, think, 0.01);
        }
    }
}
