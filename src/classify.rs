//! Classes of key values: `null`, `placeholder`, `junk` or `demand`, each with the rule that
//! decided it. The built-in rules live in `src/rules.toml` (documented there and in the
//! README); `--rules FILE` replaces or extends them.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::value::{KeyType, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    Null,
    Placeholder,
    Junk,
    Demand,
}

impl Class {
    pub fn as_str(&self) -> &'static str {
        match self {
            Class::Null => "null",
            Class::Placeholder => "placeholder",
            Class::Junk => "junk",
            Class::Demand => "demand",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Classification {
    pub class: Class,
    /// The rule that matched and why, in one line.
    pub reason: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub name: String,
    pub class: Class,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub blank: bool,
    #[serde(default)]
    pub strings: Vec<String>,
    #[serde(default)]
    pub regex: Option<String>,
    #[serde(default)]
    pub numbers: Vec<Num>,
    #[serde(default)]
    pub nan: bool,
    #[serde(default)]
    pub dates: Vec<String>,
    #[serde(default)]
    pub zero_bytes: bool,
}

/// A number in a rule: integers are compared exactly (all 64 bits), floats as floats.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Num {
    Int(i64),
    Float(f64),
}

#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Extend,
    Replace,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    #[serde(default)]
    mode: Mode,
    #[serde(default, alias = "rules")]
    rule: Vec<Rule>,
}

struct Compiled {
    rule: Rule,
    regex: Option<regex::Regex>,
    strings: Vec<String>,
    dates: Vec<i32>,
}

/// An ordered list of rules; the first that matches decides.
pub struct Classifier {
    rules: Vec<Compiled>,
}

pub const BUILTIN_RULES: &str = include_str!("rules.toml");

impl Classifier {
    pub fn builtin() -> Result<Classifier> {
        Classifier::from_rules(parse_rules(BUILTIN_RULES, false, "built-in rules")?.1)
    }

    /// The built-in rules, replaced or extended by a TOML or JSON rules file.
    pub fn with_file(path: Option<&Path>) -> Result<Classifier> {
        let builtin = parse_rules(BUILTIN_RULES, false, "built-in rules")?.1;
        let Some(path) = path else { return Classifier::from_rules(builtin) };
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Io { path: path.into(), source: e })?;
        let json = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
        let (mode, mut rules) = parse_rules(&text, json, &path.display().to_string())?;
        if mode == Mode::Extend {
            rules.extend(builtin);
        }
        Classifier::from_rules(rules)
    }

    fn from_rules(rules: Vec<Rule>) -> Result<Classifier> {
        let rules = rules
            .into_iter()
            .map(|rule| {
                if rule.class == Class::Null {
                    return Err(Error::Usage(format!(
                        "rule {}: class null is built in (SQL NULL); use placeholder",
                        rule.name
                    )));
                }
                let regex = match &rule.regex {
                    Some(r) => Some(regex::Regex::new(r).map_err(|e| {
                        Error::Usage(format!(
                            "rule {}: bad regex: {}",
                            rule.name,
                            e.to_string().lines().last().unwrap_or("")
                        ))
                    })?),
                    None => None,
                };
                let dates = rule
                    .dates
                    .iter()
                    .map(|d| {
                        chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d")
                            .map(|nd| (nd - chrono::NaiveDate::default()).num_days() as i32)
                            .map_err(|_| {
                                Error::Usage(format!(
                                    "rule {}: bad date {d:?} (want YYYY-MM-DD)",
                                    rule.name
                                ))
                            })
                    })
                    .collect::<Result<Vec<_>>>()?;
                let strings = rule.strings.iter().map(|s| s.trim().to_lowercase()).collect();
                Ok(Compiled { rule, regex, strings, dates })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Classifier { rules })
    }

    /// Classify one value of a column of type `t`.
    pub fn classify(&self, v: &Value, t: KeyType) -> Classification {
        if v.is_null() {
            return Classification {
                class: Class::Null,
                reason: "SQL NULL: equal to nothing under =, not even another NULL".into(),
            };
        }
        for c in &self.rules {
            if let Some(why) = c.matches(v) {
                let reason = match &c.rule.reason {
                    Some(r) => format!("rule {}: {} ({})", c.rule.name, r, why),
                    None => format!("rule {}: {}", c.rule.name, why),
                };
                return Classification { class: c.rule.class, reason };
            }
        }
        let _ = t;
        Classification {
            class: Class::Demand,
            reason: "no rule matched: an ordinary value, real demand".into(),
        }
    }

    /// A composite key: NULL if any part is NULL (it can never match under =), else the
    /// strongest class of its parts (placeholder over junk over demand).
    pub fn classify_key(
        &self,
        key: &[Value],
        types: &[KeyType],
        names: &[String],
    ) -> Classification {
        if key.len() == 1 {
            return self.classify(&key[0], types[0]);
        }
        let parts: Vec<Classification> =
            key.iter().zip(types).map(|(v, t)| self.classify(v, *t)).collect();
        for want in [Class::Null, Class::Placeholder, Class::Junk] {
            if let Some(i) = parts.iter().position(|p| p.class == want) {
                let reason = if want == Class::Null {
                    format!("{} is NULL: the key matches nothing under =", names[i])
                } else {
                    format!("{}: {}", names[i], parts[i].reason)
                };
                return Classification { class: want, reason };
            }
        }
        Classification {
            class: Class::Demand,
            reason: "no rule matched any part: real demand".into(),
        }
    }
}

impl Compiled {
    /// Why the rule matches `v`, or None.
    fn matches(&self, v: &Value) -> Option<String> {
        let r = &self.rule;
        match v {
            Value::Str(s) => {
                if r.blank && s.trim().is_empty() {
                    return Some(if s.is_empty() {
                        "empty string".into()
                    } else {
                        format!("{} blank characters", s.chars().count())
                    });
                }
                let low = s.trim().to_lowercase();
                if self.strings.contains(&low) {
                    return Some(format!("{:?} is listed", s.trim()));
                }
                if let Some(re) = &self.regex {
                    if let Some(m) = re.find(s) {
                        return Some(format!(
                            "matched {:?}",
                            m.as_str().trim_matches(|c: char| !c.is_alphanumeric() && c != '@')
                        ));
                    }
                }
                None
            }
            Value::Int(i) => self.integer(*i as i128, 0),
            Value::Long(l) => self.integer(*l as i128, 0),
            Value::Float(f) => self.float(*f as f64),
            Value::Double(d) => self.float(*d),
            Value::Decimal { unscaled, scale, .. } => self.integer(*unscaled, *scale),
            Value::Date(d) => {
                self.dates.contains(d).then(|| format!("{} is listed", Value::date_string(*d)))
            }
            Value::Timestamp(m) => {
                let day = m.div_euclid(86_400_000_000);
                (m.rem_euclid(86_400_000_000) == 0 && self.dates.contains(&(day as i32)))
                    .then(|| format!("midnight of {}", Value::date_string(day as i32)))
            }
            Value::Binary(b) => (r.zero_bytes && !b.is_empty() && b.iter().all(|x| *x == 0))
                .then(|| format!("{} zero bytes", b.len())),
            Value::Bool(_) | Value::Null => None,
        }
    }

    /// An exact number `unscaled * 10^-scale` (integers have scale 0).
    fn integer(&self, unscaled: i128, scale: i8) -> Option<String> {
        let text = Value::decimal_string(unscaled, scale);
        let hit = self.rule.numbers.iter().any(|n| match *n {
            Num::Int(i) => {
                if scale <= 0 {
                    scale == 0 && unscaled == i as i128
                } else {
                    10i128.checked_pow(scale as u32).and_then(|p| (i as i128).checked_mul(p))
                        == Some(unscaled)
                }
            }
            Num::Float(f) => text.parse::<f64>().is_ok_and(|x| x == f),
        });
        hit.then(|| format!("{text} is listed"))
    }

    fn float(&self, x: f64) -> Option<String> {
        if x.is_nan() {
            return self.rule.nan.then(|| "NaN".to_string());
        }
        let hit = self.rule.numbers.iter().any(|n| match *n {
            Num::Int(i) => i as f64 == x && x.fract() == 0.0 && (x as i128) == i as i128,
            Num::Float(f) => f == x,
        });
        hit.then(|| format!("{x} is listed"))
    }
}

fn parse_rules(text: &str, json: bool, origin: &str) -> Result<(Mode, Vec<Rule>)> {
    let file: RuleFile = if json {
        serde_json::from_str(text)
            .map_err(|e| Error::Usage(format!("{origin}: bad rules file: {e}")))?
    } else {
        toml::from_str(text).map_err(|e| {
            let msg = e.to_string();
            let first = msg.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
            Error::Usage(format!("{origin}: bad rules file: {}", first.trim()))
        })?
    };
    Ok((file.mode, file.rule))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class_of(v: Value, t: KeyType) -> Class {
        Classifier::builtin().unwrap().classify(&v, t).class
    }

    #[test]
    fn builtin_placeholders() {
        for s in [
            "",
            "  ",
            "unknown",
            "N/A",
            "null",
            "-",
            "?",
            "00000000-0000-0000-0000-000000000000",
            "0",
        ] {
            assert_eq!(
                class_of(Value::Str(s.into()), KeyType::String),
                Class::Placeholder,
                "{s:?}"
            );
        }
        assert_eq!(class_of(Value::Long(-1), KeyType::BigInt), Class::Placeholder);
        assert_eq!(class_of(Value::Int(0), KeyType::Int), Class::Placeholder);
        assert_eq!(class_of(Value::Date(0), KeyType::Date), Class::Placeholder);
        assert_eq!(
            class_of(Value::Timestamp(0), KeyType::Timestamp { utc: true }),
            Class::Placeholder
        );
        assert_eq!(class_of(Value::Double(f64::NAN), KeyType::Double), Class::Placeholder);
        assert_eq!(class_of(Value::Binary(vec![0; 16]), KeyType::Binary), Class::Placeholder);
        assert_eq!(
            class_of(
                Value::Decimal { unscaled: -100, precision: 10, scale: 2 },
                KeyType::Decimal { precision: 10, scale: 2 }
            ),
            Class::Placeholder
        );
    }

    #[test]
    fn builtin_junk_and_demand() {
        for s in
            ["test_user_1", "QA-account", "bot", "loadtest42", "someone@example.com", "internal"]
        {
            assert_eq!(class_of(Value::Str(s.into()), KeyType::String), Class::Junk, "{s:?}");
        }
        for s in ["contest", "tt0903747", "Breaking Bad", "user_123", "latest"] {
            assert_eq!(class_of(Value::Str(s.into()), KeyType::String), Class::Demand, "{s:?}");
        }
        assert_eq!(class_of(Value::Long(1234567), KeyType::BigInt), Class::Demand);
        assert_eq!(class_of(Value::Long(9_007_199_254_740_993), KeyType::BigInt), Class::Demand);
        assert_eq!(class_of(Value::Null, KeyType::BigInt), Class::Null);
    }

    #[test]
    fn reasons_name_the_rule() {
        let c =
            Classifier::builtin().unwrap().classify(&Value::Str("unknown".into()), KeyType::String);
        assert!(c.reason.starts_with("rule null-word"), "{}", c.reason);
    }

    #[test]
    fn user_rules_extend_and_replace() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.toml");
        std::fs::write(
            &p,
            "[[rule]]\nname = \"house\"\nclass = \"junk\"\nstrings = [\"ACME-HOUSE\"]\n",
        )
        .unwrap();
        let c = Classifier::with_file(Some(&p)).unwrap();
        assert_eq!(
            c.classify(&Value::Str("acme-house".into()), KeyType::String).class,
            Class::Junk
        );
        assert_eq!(
            c.classify(&Value::Str("unknown".into()), KeyType::String).class,
            Class::Placeholder
        );
        let p2 = dir.path().join("r.json");
        std::fs::write(
            &p2,
            r#"{"mode":"replace","rule":[{"name":"x","class":"placeholder","numbers":[42]}]}"#,
        )
        .unwrap();
        let c = Classifier::with_file(Some(&p2)).unwrap();
        assert_eq!(c.classify(&Value::Int(42), KeyType::Int).class, Class::Placeholder);
        assert_eq!(c.classify(&Value::Str("unknown".into()), KeyType::String).class, Class::Demand);
        std::fs::write(&p, "[[rule]]\nname = \"bad\"\nclass = \"junk\"\nregex = \"(\"\n").unwrap();
        assert!(Classifier::with_file(Some(&p)).is_err());
    }

    #[test]
    fn composite_keys_take_the_strongest_part() {
        let c = Classifier::builtin().unwrap();
        let names = vec!["a".to_string(), "b".to_string()];
        let t = [KeyType::String, KeyType::Int];
        assert_eq!(
            c.classify_key(&[Value::Str("x".into()), Value::Null], &t, &names).class,
            Class::Null
        );
        assert_eq!(
            c.classify_key(&[Value::Str("EU".into()), Value::Int(0)], &t, &names).class,
            Class::Placeholder
        );
        assert_eq!(
            c.classify_key(&[Value::Str("EU".into()), Value::Int(7)], &t, &names).class,
            Class::Demand
        );
    }
}
