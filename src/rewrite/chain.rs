//! A chain of joins in one FROM item (`a JOIN b ON ... JOIN c ON ...`), processed left to
//! right: the joins so far as SQL valid in the SELECT's scope, where each column of each
//! input now is, and the joins so far made one input of the next join.

use std::collections::{HashMap, HashSet};

use sqlparser::ast::{Join, JoinConstraint, JoinOperator, ObjectName, SelectItem, TableWithJoins};

use super::condition::join_type;
use super::input::Input;
use super::join::Joined;
use super::names::{factor_alias, last_ident, lc, parse_item, select_item};
use super::reason::LeftAlone;
use super::scope::{repoint_all, Remap};
use super::through::{Link, SentCache};
use super::Ctx;
use crate::error::Result;
use crate::plan::JoinType;
use crate::sql::ident;

/// A column of the joins so far: how the current SQL reaches it (`qual.name`), the name it
/// had as written, and the input it came from (None for a merged USING key).
#[derive(Clone)]
struct Slot {
    qual: String,
    name: String,
    orig: String,
    owner: Option<String>,
}

/// An input of the chain, with the slot of each of its columns.
struct Member {
    input: Input,
    slots: Vec<usize>,
    /// Its columns that are USING keys of a join (lower case): `alias.*` lists them first, as
    /// Spark does.
    using_first: Vec<String>,
}

/// A `*` entry that is `alias.*` of an input whose columns are not known.
const RAW: usize = usize::MAX;

/// The joins of one FROM item processed so far.
pub(super) struct Prefix {
    pub cur: TableWithJoins,
    slots: Vec<Slot>,
    members: Vec<Member>,
    /// What `*` of the prefix lists: a slot and the output name, or (RAW, alias) for `alias.*`.
    star: Vec<(usize, String)>,
    /// False when `*` of the prefix cannot be listed.
    star_ok: bool,
    pub rewritten: bool,
    /// Why a later join cannot take the prefix as its input.
    pub broken: Option<LeftAlone>,
    /// Each join so far as the counts follow it, or why they cannot.
    pub links: Vec<std::result::Result<Link, String>>,
    /// What the inputs sent across the links, for the later joins' counts.
    cache: SentCache,
    /// Columns equal on every row of the prefix, by its inner joins' key equalities: (member,
    /// its column in lower case) twice.
    equal: Vec<((usize, String), (usize, String))>,
}

/// The joins before a chained join, as its counts follow them.
pub(super) struct Before<'a> {
    pub members: Vec<Input>,
    pub links: &'a [std::result::Result<Link, String>],
    pub cache: &'a SentCache,
}

impl Prefix {
    /// The first FROM item of a chain, traced or not.
    pub fn start(twj: &TableWithJoins, first: std::result::Result<Input, LeftAlone>) -> Prefix {
        let cur = TableWithJoins { relation: twj.relation.clone(), joins: vec![] };
        let mut p = Prefix {
            cur,
            slots: vec![],
            members: vec![],
            star: vec![],
            star_ok: true,
            rewritten: false,
            broken: None,
            links: vec![],
            cache: Default::default(),
            equal: vec![],
        };
        match first {
            Ok(inp) => {
                let slots = p.add_member(inp);
                p.star = slots.iter().map(|&s| (s, p.slots[s].orig.clone())).collect();
            }
            Err(why) => {
                p.broken = Some(why);
                match factor_alias(&twj.relation) {
                    Some(a) => p.star.push((RAW, a)),
                    None => p.star_ok = false,
                }
            }
        }
        p
    }

    fn add_member(&mut self, input: Input) -> Vec<usize> {
        let start = self.slots.len();
        for c in &input.columns {
            self.slots.push(Slot {
                qual: input.alias.clone(),
                name: c.clone(),
                orig: c.clone(),
                owner: Some(input.alias.clone()),
            });
        }
        let slots: Vec<usize> = (start..self.slots.len()).collect();
        self.members.push(Member { input, slots: slots.clone(), using_first: vec![] });
        slots
    }

    /// The key equalities of the next join (`cond`, of the prefix `l` and the next member),
    /// which hold on every row after it when it is an inner join.
    pub fn note_equal(&mut self, cond: &super::condition::Condition, l: &Input) {
        if cond.how != JoinType::Inner {
            return;
        }
        for (lk, rk) in &cond.keys {
            let left = match l.member_of(lk) {
                Some(m) if l.quals.is_empty() => (m, lc(lk)),
                Some(m) => match l.quals[m].1.iter().find(|(_, w)| w.eq_ignore_ascii_case(lk)) {
                    Some((c, _)) => (m, c.clone()),
                    None => continue,
                },
                None => continue,
            };
            self.equal.push((left, (self.members.len(), lc(rk))));
        }
    }

    /// The index the next input joined becomes.
    pub fn next_member(&self) -> usize {
        self.members.len()
    }

    /// The inputs and joins so far, for the counts of the next join.
    pub fn before(&self) -> Before<'_> {
        Before {
            members: self.members.iter().map(|m| m.input.clone()).collect(),
            links: &self.links,
            cache: &self.cache,
        }
    }

    /// The first `members` inputs and `links` joins, as they were for a join planned earlier,
    /// with a cache of their own (for counts under other conditions).
    pub fn before_at<'a>(
        &'a self,
        members: usize,
        links: usize,
        cache: &'a SentCache,
    ) -> Before<'a> {
        Before {
            members: self.members[..members].iter().map(|m| m.input.clone()).collect(),
            links: &self.links[..links],
            cache,
        }
    }

    /// The inputs joined so far, in order.
    pub fn inputs(&self) -> impl Iterator<Item = &Input> {
        self.members.iter().map(|m| &m.input)
    }

    /// The select items of `*` over the prefix; None when they cannot be listed.
    pub fn star_items(&self) -> Result<Option<Vec<SelectItem>>> {
        if !self.star_ok {
            return Ok(None);
        }
        let item = |(s, out): &(usize, String)| {
            if *s == RAW {
                parse_item(&format!("{}.*", ident(out)))
            } else {
                parse_item(&select_item(&self.slots[*s].qual, &self.slots[*s].name, out))
            }
        };
        self.star.iter().map(item).collect::<Result<Vec<_>>>().map(Some)
    }

    /// `alias.col` of the inputs that moved into a derived table, pointed at it.
    pub fn remaps(&self) -> Vec<Remap> {
        let mut out = Vec::new();
        for m in &self.members {
            let Some(&first) = m.slots.first() else { continue };
            let qual = &self.slots[first].qual;
            if qual.eq_ignore_ascii_case(&m.input.alias) {
                continue;
            }
            let columns = m
                .input
                .columns
                .iter()
                .zip(&m.slots)
                .map(|(c, &s)| (lc(c), self.slots[s].name.clone()))
                .collect();
            let mut star: Vec<(String, String)> = m
                .input
                .columns
                .iter()
                .zip(&m.slots)
                .map(|(c, &s)| (self.slots[s].name.clone(), c.clone()))
                .collect();
            star.sort_by_key(|(_, c)| {
                m.using_first.iter().position(|k| *k == lc(c)).unwrap_or(usize::MAX)
            });
            out.push(Remap {
                alias: m.input.alias.clone(),
                new_alias: qual.clone(),
                columns,
                star,
            });
        }
        out
    }

    /// The prefix as one input of the next join. A single table as written is itself;
    /// anything else becomes `(SELECT <every column, under unique names> FROM <prefix>)`.
    pub fn as_input(&self, right: &Input, right_out: bool, ctx: &mut Ctx) -> Input {
        if !self.rewritten && self.cur.joins.is_empty() && self.members.len() == 1 {
            return self.members[0].input.clone();
        }
        let alias = format!("__sjp{}", ctx.next_id);
        ctx.next_id += 1;
        self.as_input_named(right, right_out, alias)
    }

    /// The prefix as one input named `alias` (see `as_input`), also for a single table.
    pub fn as_input_named(&self, right: &Input, right_out: bool, alias: String) -> Input {
        if !self.rewritten && self.cur.joins.is_empty() && self.members.len() == 1 {
            return self.members[0].input.clone();
        }
        let (wraps, bare) = self.unique_names(right, right_out);
        let mut cur = self.cur.clone();
        crate::sql::fix_literals(&mut cur);
        let list: Vec<String> =
            self.slots.iter().zip(&wraps).map(|(s, w)| select_item(&s.qual, &s.name, w)).collect();
        let mut base = HashMap::new();
        let mut quals: Vec<(String, HashMap<String, String>)> = Vec::new();
        for m in &self.members {
            let mut q = HashMap::new();
            for (c, &s) in m.input.columns.iter().zip(&m.slots) {
                q.insert(lc(c), wraps[s].clone());
                if let Some(b) = m.input.base.get(&lc(c)) {
                    base.insert(lc(&wraps[s]), b.clone());
                }
            }
            quals.push((m.input.alias.clone(), q));
        }
        let name = |(m, c): &(usize, String)| quals.get(*m).and_then(|(_, q)| q.get(c)).cloned();
        let equal = self.equal.iter().filter_map(|(a, b)| Some((name(a)?, name(b)?))).collect();
        Input {
            alias,
            source: format!("(SELECT {} FROM {cur})", list.join(", ")),
            columns: wraps,
            base,
            // The counts of a prefix are its base table's: no member's filter applies.
            filtered: self
                .members
                .iter()
                .any(|m| m.input.filtered || m.input.having || !m.input.conditions.is_empty()),
            conditions: vec![],
            quals,
            bare,
            joined: Some(String::new()),
            // A grouped member's key counts in the prefix are its base table's: an estimate,
            // as the chain's note says.
            grouped: None,
            having: false,
            equal,
        }
    }

    /// A name for each slot, unique in the prefix made one input (and beside the right
    /// input's columns when the join outputs them), and the names of the merged USING keys.
    fn unique_names(
        &self,
        right: &Input,
        right_out: bool,
    ) -> (Vec<String>, HashMap<String, String>) {
        let mut seen: HashMap<String, usize> = HashMap::new();
        for s in &self.slots {
            *seen.entry(lc(&s.orig)).or_default() += 1;
        }
        let mut taken: HashSet<String> = if right_out {
            right.columns.iter().map(|c| lc(c)).collect()
        } else {
            Default::default()
        };
        let mut wraps = Vec::new();
        let mut bare = HashMap::new();
        for s in &self.slots {
            // A USING key's merged column keeps the bare name; the columns it merges do not.
            let mut w = if (s.owner.is_none() || seen[&lc(&s.orig)] == 1)
                && !taken.contains(&lc(&s.orig))
            {
                s.orig.clone()
            } else {
                format!("{}__{}", s.owner.as_deref().unwrap_or("using"), s.orig)
            };
            let stem = w.clone();
            let mut n = 2;
            while taken.contains(&lc(&w)) {
                w = format!("{stem}_{n}");
                n += 1;
            }
            taken.insert(lc(&w));
            if s.owner.is_none() {
                bare.insert(lc(&s.orig), w.clone());
            }
            wraps.push(w);
        }
        (wraps, bare)
    }

    /// A join left as written joins the prefix.
    pub fn append(&mut self, join: &Join, right: Option<Input>) {
        let join = self.repointed(join);
        let op = join.join_operator.clone();
        let right_alias = factor_alias(&join.relation);
        self.cur.joins.push(join);
        let how = match &op {
            JoinOperator::CrossJoin(c) => Ok((JoinType::Inner, c)),
            other => join_type(other),
        };
        let (how, constraint) = match how {
            Ok(x) => x,
            Err(why) => {
                self.star_ok = false;
                self.broken.get_or_insert(why);
                return;
            }
        };
        if !how.outputs_right() {
            if let JoinConstraint::Using(cols) = constraint {
                self.using_first(cols);
            }
            return;
        }
        let right = match (right, &self.broken) {
            (Some(r), None) => r,
            (r, _) => return self.append_unknown(right_alias, constraint, r.is_none()),
        };
        let before = self.star.clone();
        let rslots = self.add_member(right);
        match constraint {
            JoinConstraint::Using(cols) => self.star_after_using(how, cols, before, &rslots),
            JoinConstraint::Natural => self.broken = Some(LeftAlone::NaturalBefore),
            _ => {
                let extra: Vec<(usize, String)> =
                    rslots.iter().map(|&s| (s, self.slots[s].orig.clone())).collect();
                self.star.extend(extra);
            }
        }
    }

    /// The join as the prefix holds it: its ON re-pointed at the derived tables so far.
    fn repointed(&self, join: &Join) -> Join {
        let mut join = join.clone();
        if self.rewritten {
            let remaps = self.remaps();
            if let Some(e) = crate::sql::on_condition_mut(&mut join.join_operator) {
                repoint_all(e, &remaps);
            }
        }
        join
    }

    /// A join whose right input's columns are not known here (`untraced`, or the prefix is
    /// broken): `*` lists them as `alias.*` after the rest.
    fn append_unknown(
        &mut self,
        right_alias: Option<String>,
        constraint: &JoinConstraint,
        untraced: bool,
    ) {
        match (right_alias, constraint) {
            (Some(a), JoinConstraint::On(_) | JoinConstraint::None) => self.star.push((RAW, a)),
            _ => self.star_ok = false,
        }
        if untraced {
            self.broken.get_or_insert(LeftAlone::InputBeforeUntraced);
        }
    }

    /// `*` of `a JOIN b USING (k)`: k (merged), then the rest of a (`before`), then of b.
    fn star_after_using(
        &mut self,
        how: JoinType,
        cols: &[ObjectName],
        before: Vec<(usize, String)>,
        rslots: &[usize],
    ) {
        if how == JoinType::Full {
            self.broken = Some(LeftAlone::FullUsingBefore);
            return;
        }
        let keys: Vec<String> =
            cols.iter().filter_map(|c| last_ident(c).map(|i| lc(&i.value))).collect();
        let mut star = Vec::new();
        for k in &keys {
            let pick = if how == JoinType::Right {
                rslots
                    .iter()
                    .find(|&&s| lc(&self.slots[s].orig) == *k)
                    .map(|&s| (s, self.slots[s].orig.clone()))
            } else {
                before.iter().find(|(i, o)| *i != RAW && lc(o) == *k).cloned()
            };
            let Some((slot, out)) = pick else {
                self.broken = Some(LeftAlone::UsingNotOnBothSides(k.clone()));
                return;
            };
            // The merged column: a slot of its own, so a bare `k` finds it.
            let mut m = self.slots[slot].clone();
            m.owner = None;
            self.slots.push(m);
            star.push((self.slots.len() - 1, out));
        }
        star.extend(before.into_iter().filter(|(_, o)| !keys.contains(&lc(o))));
        star.extend(
            rslots
                .iter()
                .filter(|&&s| !keys.contains(&lc(&self.slots[s].orig)))
                .map(|&s| (s, self.slots[s].orig.clone())),
        );
        self.star = star;
        self.mark_using(&keys);
    }

    /// A SEMI or ANTI join USING (k) left as written: `*` lists k first, as Spark does.
    fn using_first(&mut self, cols: &[ObjectName]) {
        let keys: Vec<String> =
            cols.iter().filter_map(|c| last_ident(c).map(|i| lc(&i.value))).collect();
        let slots = &self.slots;
        self.star.sort_by_key(|(s, o)| {
            if *s != RAW && slots[*s].owner.is_some() {
                keys.iter().position(|k| *k == lc(o)).unwrap_or(usize::MAX)
            } else {
                usize::MAX
            }
        });
        self.mark_using(&keys);
    }

    /// Each member with a column named as a USING key lists it first in its `alias.*`.
    fn mark_using(&mut self, keys: &[String]) {
        for m in &mut self.members {
            m.using_first = keys.iter().filter(|k| m.input.column(k).is_some()).cloned().collect();
        }
    }

    /// A join rewritten into the derived table `j.alias`: every column is now there.
    pub fn absorb(&mut self, left: &Input, right: &Input, j: Joined) {
        for (i, c) in left.columns.iter().enumerate() {
            if let Some(e) = j.left.get(&lc(c)) {
                self.slots[i].qual = j.alias.clone();
                self.slots[i].name = e.clone();
            }
        }
        let before = std::mem::take(&mut self.star);
        let mut merged = Vec::new();
        for k in &j.using {
            self.slots.push(Slot {
                qual: j.alias.clone(),
                name: k.clone(),
                orig: k.clone(),
                owner: None,
            });
            merged.push((self.slots.len() - 1, k.clone()));
        }
        let keys: Vec<String> = j.using.iter().map(|k| lc(k)).collect();
        let mut star = merged;
        star.extend(before.into_iter().filter(|(_, o)| !keys.contains(&lc(o))));
        if j.how.outputs_right() {
            let rslots = self.add_member(right.clone());
            for (&s, c) in rslots.iter().zip(&right.columns) {
                self.slots[s].qual = j.alias.clone();
                self.slots[s].name = j.right.get(&lc(c)).cloned().unwrap_or_else(|| c.clone());
                if !keys.contains(&lc(c)) {
                    star.push((s, c.clone()));
                }
            }
        }
        self.star = star;
        self.mark_using(&keys);
        self.cur = TableWithJoins { relation: j.relation, joins: vec![] };
        self.rewritten = true;
    }
}
