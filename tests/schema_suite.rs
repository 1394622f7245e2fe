//! The official JSON-Schema-Test-Suite (draft 2020-12) for the payload schema
//! subset of src/engine/schema.rs: every case of the keywords it supports, vendored
//! in tests/json-schema-suite/. A group whose schema uses a keyword outside the
//! subset must be refused on load, naming the keyword's path; the list of those
//! groups is pinned here, so a keyword that starts or stops being refused shows.

use idem::schema::Schemas;
use idem::Code;
use serde_json::{json, Value};

const FILES: &[(&str, &str)] = &[
    ("type", include_str!("json-schema-suite/draft2020-12/type.json")),
    ("required", include_str!("json-schema-suite/draft2020-12/required.json")),
    ("properties", include_str!("json-schema-suite/draft2020-12/properties.json")),
    ("additionalProperties", include_str!("json-schema-suite/draft2020-12/additionalProperties.json")),
    ("items", include_str!("json-schema-suite/draft2020-12/items.json")),
    ("enum", include_str!("json-schema-suite/draft2020-12/enum.json")),
    ("const", include_str!("json-schema-suite/draft2020-12/const.json")),
    ("minimum", include_str!("json-schema-suite/draft2020-12/minimum.json")),
    ("maximum", include_str!("json-schema-suite/draft2020-12/maximum.json")),
    ("exclusiveMinimum", include_str!("json-schema-suite/draft2020-12/exclusiveMinimum.json")),
    ("exclusiveMaximum", include_str!("json-schema-suite/draft2020-12/exclusiveMaximum.json")),
    ("minLength", include_str!("json-schema-suite/draft2020-12/minLength.json")),
    ("maxLength", include_str!("json-schema-suite/draft2020-12/maxLength.json")),
    ("minItems", include_str!("json-schema-suite/draft2020-12/minItems.json")),
    ("maxItems", include_str!("json-schema-suite/draft2020-12/maxItems.json")),
    ("boolean_schema", include_str!("json-schema-suite/draft2020-12/boolean_schema.json")),
    ("pattern", include_str!("json-schema-suite/draft2020-12/pattern.json")),
];

/// Groups refused on load (file, description, the refused keyword's path).
const REFUSED: &[(&str, &str, &str)] = &[
    ("properties", "properties, patternProperties, additionalProperties interaction", "events.E.payload.patternProperties"),
    ("additionalProperties", "additionalProperties being false does not allow other properties", "events.E.payload.patternProperties"),
    ("additionalProperties", "non-ASCII pattern with additionalProperties", "events.E.payload.patternProperties"),
    ("additionalProperties", "additionalProperties does not look in applicators", "events.E.payload.allOf"),
    ("additionalProperties", "additionalProperties with propertyNames", "events.E.payload.propertyNames"),
    ("additionalProperties", "dependentSchemas with additionalProperties", "events.E.payload.dependentSchemas"),
    ("items", "items and subitems", "events.E.payload.$defs"),
    ("items", "prefixItems with no additional items allowed", "events.E.payload.prefixItems"),
    ("items", "items does not look in applicators, valid case", "events.E.payload.allOf"),
    ("items", "prefixItems validation adjusts the starting index for items", "events.E.payload.prefixItems"),
    ("items", "items with heterogeneous array", "events.E.payload.prefixItems"),
    ("pattern", "pattern validation", "events.E.payload.pattern"),
    ("pattern", "pattern is not anchored", "events.E.payload.pattern"),
];

#[test]
fn the_official_suite_passes_for_the_subset_and_refuses_the_rest() {
    let mut refused = Vec::new();
    let mut cases = 0;
    for (file, text) in FILES {
        let groups: Vec<Value> = serde_json::from_str(text).unwrap();
        for g in &groups {
            let desc = g["description"].as_str().unwrap();
            let decl = json!({ "E": { "payload": g["schema"] } });
            let schemas = match Schemas::load(Some(&decl)) {
                Ok(s) => s,
                Err(e) => {
                    assert_eq!(e.code, Code::InvalidDefinition, "{file}: {desc}");
                    refused.push((file.to_string(), desc.to_string(), e.path.clone().unwrap()));
                    continue;
                }
            };
            for t in g["tests"].as_array().unwrap() {
                let valid = t["valid"].as_bool().unwrap();
                let got = schemas.check("E", &t["data"]);
                match &got {
                    Ok(()) => assert!(valid, "{file}: {desc}: {} was accepted", t["description"]),
                    Err(e) => {
                        assert!(!valid, "{file}: {desc}: {} was refused: {}", t["description"], e.message);
                        assert_eq!(e.code, Code::InvalidPayload);
                        assert!(e.path.as_deref().unwrap().starts_with("payload"));
                    }
                }
                cases += 1;
            }
        }
    }
    let pinned: Vec<(String, String, String)> =
        REFUSED.iter().map(|(f, d, p)| (f.to_string(), d.to_string(), p.to_string())).collect();
    for r in &refused {
        println!("    (\"{}\", \"{}\", \"{}\"),", r.0, r.1.replace('"', "\\\""), r.2.replace('"', "\\\""));
    }
    assert_eq!(refused, pinned);
    println!("{cases} cases");
    assert!(cases > 250, "{cases} cases");
}
