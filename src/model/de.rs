//! Reading the model structs that keep unknown members in `extra`.
//!
//! `#[serde(flatten)]` would buffer every member of such a struct in an intermediate tree and
//! read the unknown ones a second time; the impls written by `deserialize_struct!` (in
//! `mod.rs`) read each member once, straight into its field or into `extra`, and behave as the
//! derived ones did: the same fields, the same errors (`missing field`, `duplicate field`,
//! `expected struct X`), unknown members kept in document order (a repeated unknown member
//! keeps its first place and its last value, as `Map::insert` does). The `#[serde(flatten)]`
//! left on the `extra` fields serves `Serialize` only.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeSeed, Visitor};

/// A member name: a known field, or an unknown name to keep in `extra`.
pub(crate) enum Key<F> {
    Known(F),
    Other(String),
}

/// Reads a member name against a table of the known ones (wire name, field).
pub(crate) struct Keys<F: 'static>(pub(crate) &'static [(&'static str, F)]);

impl<F: Copy> Keys<F> {
    fn find(&self, name: &str) -> Option<F> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
    }
}

impl<'de, F: Copy> DeserializeSeed<'de> for Keys<F> {
    type Value = Key<F>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Key<F>, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl<'de, F: Copy> Visitor<'de> for Keys<F> {
    type Value = Key<F>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("field identifier")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<F>, E> {
        Ok(self
            .find(v)
            .map_or_else(|| Key::Other(v.to_owned()), Key::Known))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Key<F>, E> {
        Ok(match self.find(&v) {
            Some(f) => Key::Known(f),
            None => Key::Other(v),
        })
    }
}

/// Reads a member name as a string, borrowed from the input when it can be.
pub(super) struct CowKey<'de>(pub(super) PhantomData<&'de ()>);

impl<'de> DeserializeSeed<'de> for CowKey<'de> {
    type Value = Cow<'de, str>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for CowKey<'de> {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v))
    }
}
