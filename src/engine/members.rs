//! A small map by member name: a sorted `Vec` of `(name, value)` pairs.
//!
//! Why it exists: nearly every target is a group of one, yet each keeps its
//! members in maps, and builds more of them every window (the reads, the
//! writers' views). A `BTreeMap` with one entry allocates a whole node of
//! eleven, so at 5,000 targets the members alone held 33 MB (heaptrack,
//! `scripts/scale-run`), and each window paid for two node allocations. This
//! map holds exactly what it holds, keeps the `BTreeMap` order (by name) for
//! every iteration, and finds a name by binary search; groups have tens of
//! members, not thousands, so insertion in the middle costs nothing that
//! matters.

use std::borrow::Borrow;

/// Values by member name, in name order.
#[derive(Debug, Clone, PartialEq)]
pub struct Members<V> {
    entries: Vec<(String, V)>,
}

impl<V> Default for Members<V> {
    fn default() -> Self {
        Members {
            entries: Vec::new(),
        }
    }
}

impl<V> Members<V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    fn find<Q: Ord + ?Sized>(&self, name: &Q) -> Result<usize, usize>
    where
        String: Borrow<Q>,
    {
        self.entries.binary_search_by(|(k, _)| k.borrow().cmp(name))
    }

    /// The value for `name`.
    pub fn get<Q: Ord + ?Sized>(&self, name: &Q) -> Option<&V>
    where
        String: Borrow<Q>,
    {
        self.find(name).ok().map(|i| &self.entries[i].1)
    }

    /// The value for `name`, to change.
    pub fn get_mut<Q: Ord + ?Sized>(&mut self, name: &Q) -> Option<&mut V>
    where
        String: Borrow<Q>,
    {
        self.find(name).ok().map(|i| &mut self.entries[i].1)
    }

    /// Whether `name` is in the map.
    pub fn contains_key<Q: Ord + ?Sized>(&self, name: &Q) -> bool
    where
        String: Borrow<Q>,
    {
        self.find(name).is_ok()
    }

    /// Sets `name` to `value`; returns the value it replaces.
    pub fn insert(&mut self, name: String, value: V) -> Option<V> {
        match self.find(name.as_str()) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                // Exactly one more slot: a `Vec` otherwise grows to four,
                // and nearly every target has exactly one member.
                self.entries.reserve_exact(1);
                self.entries.insert(i, (name, value));
                None
            }
        }
    }

    /// Takes `name` out of the map.
    pub fn remove<Q: Ord + ?Sized>(&mut self, name: &Q) -> Option<V>
    where
        String: Borrow<Q>,
    {
        self.find(name).ok().map(|i| self.entries.remove(i).1)
    }

    /// How many members.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `(name, value)` in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// Names in order.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.entries.iter().map(|(k, _)| k)
    }

    /// Values in name order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }

    /// Values in name order, to change.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.entries.iter_mut().map(|(_, v)| v)
    }
}

impl<V> std::ops::Index<&str> for Members<V> {
    type Output = V;

    /// The value for `name`; panics if there is none, like a `BTreeMap`.
    fn index(&self, name: &str) -> &V {
        self.get(name)
            .unwrap_or_else(|| panic!("no member named {name:?}"))
    }
}

impl<V> FromIterator<(String, V)> for Members<V> {
    fn from_iter<I: IntoIterator<Item = (String, V)>>(iter: I) -> Self {
        let mut m = Members::new();
        for (k, v) in iter {
            m.insert(k, v);
        }
        m
    }
}

impl<V, const N: usize> From<[(String, V); N]> for Members<V> {
    fn from(entries: [(String, V); N]) -> Self {
        entries.into_iter().collect()
    }
}

impl<V> IntoIterator for Members<V> {
    type Item = (String, V);
    type IntoIter = std::vec::IntoIter<(String, V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<'a, V> IntoIterator for &'a Members<V> {
    type Item = (&'a String, &'a V);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, V)>,
        fn(&'a (String, V)) -> (&'a String, &'a V),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(k, v)| (k, v))
    }
}

#[cfg(test)]
mod tests {
    use super::Members;
    use std::collections::BTreeMap;

    #[test]
    fn behaves_like_a_btreemap() {
        let ops: Vec<(bool, &str, u32)> = vec![
            (true, "b", 1),
            (true, "a", 2),
            (true, "c", 3),
            (true, "b", 4),
            (false, "a", 0),
            (false, "zz", 0),
            (true, "aa", 5),
        ];
        let mut ours = Members::new();
        let mut theirs = BTreeMap::new();
        for (insert, k, v) in ops {
            if insert {
                assert_eq!(
                    ours.insert(k.to_string(), v),
                    theirs.insert(k.to_string(), v)
                );
            } else {
                assert_eq!(ours.remove(k), theirs.remove(k));
            }
            let a: Vec<(&String, &u32)> = ours.iter().collect();
            let b: Vec<(&String, &u32)> = theirs.iter().collect();
            assert_eq!(a, b);
            assert_eq!(ours.len(), theirs.len());
        }
        assert_eq!(ours.get("c"), Some(&3));
        assert_eq!(ours.get("x"), None);
        assert!(ours.contains_key("aa"));
        *ours.get_mut("b").unwrap() = 9;
        assert_eq!(ours.values().copied().collect::<Vec<_>>(), vec![5, 9, 3]);
        let owned: Vec<(String, u32)> = ours.into_iter().collect();
        assert_eq!(owned[0].0, "aa");
    }
}
