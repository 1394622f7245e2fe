//! Building `serde_json::Value`s from Rust values: the `object!` macro and
//! [`ToValue`], which make the values serde_json's `json!` and `to_value` make.

use serde_json::{Map, Number, Value};

/// A JSON object from `"key": value` pairs, each value as serde_json
/// serializes it: serde_json's `json!` for one flat object, through
/// [`to_value`] (values built directly, see [`ToValue`]) rather than
/// serde_json's `to_value(..).unwrap()`, which is what `json!` expands to and
/// which can fail, where this cannot. A nested object is another `object!`.
macro_rules! object {
    ($($body:tt)*) => {
        serde_json::Value::Object($crate::json::members! { $($body)* })
    };
}
pub(crate) use object;

/// [`object!`]'s map, for an object that gets more members before it is done
/// (`Value`'s `IndexMut` would add them too, but it panics on a non-object).
macro_rules! members {
    ($($key:literal: $value:expr),* $(,)?) => {{
        #[allow(unused_mut)]
        let mut map = serde_json::Map::new();
        $(map.insert(String::from($key), $crate::json::to_value(&$value));)*
        map
    }};
}
pub(crate) use members;

/// `value` as a JSON value, the value serde_json's `to_value` makes of it,
/// built directly (see [`ToValue`]).
pub fn to_value<T: ToValue + ?Sized>(value: &T) -> Value {
    value.to_value()
}

/// What `object!` and [`to_value`] take: a type made into the `Value` that
/// serde_json's `to_value` makes of it (strings, booleans, integers, `Value`s,
/// `None` as null, sequences as arrays, maps with string keys as objects), built
/// directly rather than through serde's serializer. The snapshot's structs
/// implement it in `src/snapshot/`.
pub trait ToValue {
    fn to_value(&self) -> Value;
}

impl ToValue for Value {
    fn to_value(&self) -> Value {
        self.clone()
    }
}

impl ToValue for str {
    fn to_value(&self) -> Value {
        Value::String(self.to_string())
    }
}

impl ToValue for String {
    fn to_value(&self) -> Value {
        Value::String(self.clone())
    }
}

impl ToValue for bool {
    fn to_value(&self) -> Value {
        Value::Bool(*self)
    }
}

macro_rules! to_value_int {
    ($($t:ty),*) => {$(
        impl ToValue for $t {
            fn to_value(&self) -> Value {
                Value::Number(Number::from(*self))
            }
        }
    )*};
}
to_value_int!(u32, u64, usize, i64);

impl<T: ToValue + ?Sized> ToValue for &T {
    fn to_value(&self) -> Value {
        (**self).to_value()
    }
}

impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> Value {
        self.as_ref().map_or(Value::Null, T::to_value)
    }
}

impl<T: ToValue> ToValue for [T] {
    fn to_value(&self) -> Value {
        Value::Array(self.iter().map(T::to_value).collect())
    }
}

impl<T: ToValue> ToValue for Vec<T> {
    fn to_value(&self) -> Value {
        self.as_slice().to_value()
    }
}

impl<T: ToValue> ToValue for std::collections::BTreeMap<String, T> {
    fn to_value(&self) -> Value {
        // One insert at a time, in the map's (sorted) order.
        let mut map = Map::new();
        for (k, v) in self {
            map.insert(k.clone(), v.to_value());
        }
        Value::Object(map)
    }
}
