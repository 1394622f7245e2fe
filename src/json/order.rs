//! The order in which a JSON document's object members are written.
//!
//! A `serde_json::Value` keeps an object's members sorted by key: the order
//! idem writes everything in, and the cheapest map to build and look up on the
//! per-event path. (With the `analysis` feature serde_json's `preserve_order`
//! is on, for the XState importer, which writes a definition in its source's
//! order; nothing else may depend on which.) Where the order a person wrote
//! means something, in a definition's sibling states, parallel regions,
//! transitions and delays, the builder reads it from an [`Order`] of the same
//! document instead of from the map.

use serde_json::{Map, Value};

/// The shape of a JSON document: its arrays and objects, each object's member
/// names in the order they were written, and nothing of its scalars.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Order {
    /// A scalar, or a place the document's order is not known for.
    #[default]
    Leaf,
    Array(Vec<Order>),
    /// Members in document order. A name written twice keeps the place of its
    /// first writing and the shape of its last, as a `Value` keeps the last value.
    Object(Vec<(String, Order)>),
}

static LEAF: Order = Order::Leaf;

impl Order {
    /// The order of JSON text, as `json::parse_prefix` reads it; `Leaf`
    /// where that refuses it.
    pub fn of_text(text: &str) -> Order {
        super::parse::order_of(text)
    }

    /// The order a value's maps iterate in: what a definition built in Rust
    /// (`json!`, `Map::insert`) has to go by.
    pub fn of_value(value: &Value) -> Order {
        match value {
            Value::Array(items) => Order::Array(items.iter().map(Order::of_value).collect()),
            Value::Object(m) => Order::Object(m.iter().map(|(k, v)| (k.clone(), Order::of_value(v))).collect()),
            _ => Order::Leaf,
        }
    }

    /// The shape of member `key`; `Leaf` when there is none.
    pub fn member(&self, key: &str) -> &Order {
        match self {
            Order::Object(members) => members.iter().find(|(k, _)| k == key).map_or(&LEAF, |(_, o)| o),
            _ => &LEAF,
        }
    }

    /// The members of `map`, the object this is the shape of, in document
    /// order, each with its own shape. When this is not that object's shape
    /// (`Leaf`, or other names), in the map's order, each shape `Leaf`.
    pub fn members<'v, 's>(&'s self, map: &'v Map<String, Value>) -> Members<'v, 's> {
        match self {
            Order::Object(members) if members.len() == map.len() && members.iter().all(|(k, _)| map.contains_key(k)) => {
                Members::Written { map, members: members.iter() }
            }
            _ => Members::Map(map.iter()),
        }
    }

    /// The shape of item `i` of an array of `len` items; `Leaf` when this is
    /// not that array's shape.
    fn item(&self, i: usize, len: usize) -> &Order {
        match self {
            Order::Array(items) if items.len() == len => &items[i],
            _ => &LEAF,
        }
    }

    /// `value`, whose shape this is, as JSON text with its members in this
    /// order (where it is not `value`'s shape, in the map's order).
    pub fn write(&self, value: &Value, out: &mut Vec<u8>) {
        match (value, self) {
            (Value::Object(m), _) => {
                out.push(b'{');
                for (i, (k, v, o)) in self.members(m).enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    super::write_str(k, out);
                    out.push(b':');
                    o.write(v, out);
                }
                out.push(b'}');
            }
            (Value::Array(items), _) => {
                out.push(b'[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    self.item(i, items.len()).write(v, out);
                }
                out.push(b']');
            }
            _ => super::write_json(value, out),
        }
    }
}

/// The iterator of [`Order::members`].
pub enum Members<'v, 's> {
    Written { map: &'v Map<String, Value>, members: std::slice::Iter<'s, (String, Order)> },
    Map(serde_json::map::Iter<'v>),
}

impl<'v, 's> Iterator for Members<'v, 's> {
    type Item = (&'v String, &'v Value, &'s Order);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Members::Written { map, members } => {
                let (k, order) = members.next()?;
                let (k, v) = map.get_key_value(k)?;
                Some((k, v, order))
            }
            Members::Map(it) => it.next().map(|(k, v)| (k, v, &LEAF)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn members_come_in_document_order_whatever_the_map_keeps() {
        let text = r#"{"zeta": {"b": 1, "a": [{"y": 0, "x": 0}]}, "alpha": 2, "mid": null}"#;
        let order = Order::of_text(text);
        let value: Value = serde_json::from_str(text).unwrap();
        let names: Vec<&str> = order.members(value.as_object().unwrap()).map(|(k, _, _)| k.as_str()).collect();
        assert_eq!(names, ["zeta", "alpha", "mid"]);
        let zeta = order.member("zeta");
        let inner: Vec<&str> = zeta.members(value["zeta"].as_object().unwrap()).map(|(k, _, _)| k.as_str()).collect();
        assert_eq!(inner, ["b", "a"]);
        let Order::Array(items) = zeta.member("a") else { panic!("an array's shape") };
        assert_eq!(items[0], Order::Object(vec![("y".into(), Order::Leaf), ("x".into(), Order::Leaf)]));
    }

    #[test]
    fn a_name_written_twice_keeps_its_first_place_and_its_last_shape() {
        let text = r#"{"b": {"q": 1, "p": 2}, "a": 0, "b": {"s": 1, "r": 2}}"#;
        let order = Order::of_text(text);
        let value: Value = serde_json::from_str(text).unwrap();
        let got: Vec<(&str, Vec<&str>)> = order
            .members(value.as_object().unwrap())
            .map(|(k, v, o)| (k.as_str(), v.as_object().map_or(vec![], |m| o.members(m).map(|(k, _, _)| k.as_str()).collect())))
            .collect();
        assert_eq!(got, [("b", vec!["s", "r"]), ("a", vec![])]);
    }

    #[test]
    fn a_shape_of_another_object_falls_back_to_the_maps_order() {
        let order = Order::of_text(r#"{"b": 1, "c": 2}"#);
        let value = json!({ "b": 1, "a": 2 });
        let map = value.as_object().unwrap();
        let names: Vec<&str> = order.members(map).map(|(k, _, _)| k.as_str()).collect();
        let in_map: Vec<&str> = map.keys().map(String::as_str).collect();
        assert_eq!(names, in_map);
        assert_eq!(Order::Leaf.members(map).count(), 2);
        assert_eq!(Order::of_text("not json"), Order::Leaf);
    }

    #[test]
    fn written_in_document_order() {
        let text = r#"{"z": [{"b": 1, "a": {"d": null, "c": "x"}}], "y": {}, "e": [1, "two", {"g": 0, "f": 0}]}"#;
        let value: Value = serde_json::from_str(text).unwrap();
        let mut out = Vec::new();
        Order::of_text(text).write(&value, &mut out);
        assert_eq!(String::from_utf8(out).unwrap(), text.replace(' ', ""));
        let mut unshaped = Vec::new();
        Order::Leaf.write(&value, &mut unshaped);
        let mut in_map = Vec::new();
        super::super::write_in_order(&value, &mut in_map);
        assert_eq!(unshaped, in_map, "no shape: the map's order");
    }

    #[test]
    fn a_values_own_order_is_its_maps() {
        let value = json!({ "s": { "y": 1, "x": [ { "k": true } ] } });
        let order = Order::of_value(&value);
        let map = value.as_object().unwrap();
        let (_, s, so) = order.members(map).next().unwrap();
        let names: Vec<&str> = so.members(s.as_object().unwrap()).map(|(k, _, _)| k.as_str()).collect();
        let in_map: Vec<&str> = s.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(names, in_map);
    }
}
