//! Function docs to OpenAI tools, as BFCL's `convert_to_tool(functions,
//! GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)` does, and BFCL's
//! optional language-hint pre-processing.

use serde_json::{Map, Value};

/// BFCL's `GORILLA_TO_OPENAPI`; any other type becomes `string`.
fn openapi_type(gorilla: &str) -> Option<&'static str> {
    Some(match gorilla {
        "integer" | "byte" | "short" | "long" | "Bigint" => "integer",
        "number" | "float" | "double" => "number",
        "string" | "any" | "char" | "Any" | "String" => "string",
        "boolean" | "bool" => "boolean",
        "array" | "list" | "tuple" | "ArrayList" | "Array" | "Queue" | "Stack" => "array",
        "dict" | "object" | "HashMap" | "Hashtable" => "object",
        _ => return None,
    })
}

/// A doc that does not have the shape the conversion needs (the reference
/// raises on these too).
pub type DocError = String;

/// Converts an entry's function docs to the `tools` array.
pub fn convert(functions: &[Value]) -> Result<Vec<Value>, DocError> {
    into_tools(functions.to_vec())
}

/// [`convert`], taking the docs: each one becomes its tool in place, nothing is copied.
pub fn into_tools(functions: Vec<Value>) -> Result<Vec<Value>, DocError> {
    functions.into_iter().map(convert_one).collect()
}

fn convert_one(doc: Value) -> Result<Value, DocError> {
    let Value::Object(mut item) = doc else {
        return Err("a function doc is not an object".into());
    };
    let name = item
        .get("name")
        .and_then(Value::as_str)
        .ok_or("a function doc has no string 'name'")?
        .replace('.', "_");
    item.insert("name".into(), name.into());
    let parameters = item
        .get_mut("parameters")
        .and_then(Value::as_object_mut)
        .ok_or("a function doc has no 'parameters' object")?;
    parameters.insert("type".into(), "object".into());
    let properties = parameters
        .get_mut("properties")
        .and_then(Value::as_object_mut)
        .ok_or("'parameters' has no 'properties' object")?;
    cast_properties(properties)?;
    Ok(serde_json::json!({"type": "function", "function": Value::Object(item)}))
}

/// Port of `_cast_to_openai_type`: maps each property's type, marks floats,
/// and recurses into `properties`, `items`, and items of items.
fn cast_properties(properties: &mut Map<String, Value>) -> Result<(), DocError> {
    for (key, value) in properties.iter_mut() {
        let prop = value
            .as_object_mut()
            .ok_or_else(|| format!("property '{key}' is not an object"))?;
        match prop.get("type").and_then(Value::as_str).map(str::to_owned) {
            None => {
                prop.insert("type".into(), "string".into());
            }
            Some(gorilla) => {
                if gorilla == "float" {
                    prop.insert("format".into(), "float".into());
                    let description = prop
                        .get_mut("description")
                        .and_then(|d| match d {
                            Value::String(s) => Some(s),
                            _ => None,
                        })
                        .ok_or_else(|| format!("float property '{key}' has no description"))?;
                    description.push_str(" This is a float type value.");
                }
                let mapped = openapi_type(&gorilla).unwrap_or("string");
                prop.insert("type".into(), mapped.into());
            }
        }
        let ty = prop["type"].as_str().unwrap_or_default().to_owned();
        if ty != "array" && ty != "object" {
            continue;
        }
        if let Some(nested) = prop.get_mut("properties") {
            let nested = nested
                .as_object_mut()
                .ok_or_else(|| format!("'{key}.properties' is not an object"))?;
            cast_properties(nested)?;
        } else if let Some(items) = prop.get_mut("items").and_then(Value::as_object_mut) {
            let item_ty = map_strict(items, key)?;
            if item_ty == "array" {
                if let Some(inner) = items.get_mut("items").and_then(Value::as_object_mut) {
                    map_strict(inner, key)?;
                }
            } else if item_ty == "object" {
                if let Some(nested) = items.get_mut("properties").and_then(Value::as_object_mut) {
                    cast_properties(nested)?;
                }
            }
        }
    }
    Ok(())
}

/// `items["type"] = mapping[items["type"]]`: a missing or unknown type is a
/// `KeyError` in the reference, an error here.
fn map_strict(items: &mut Map<String, Value>, key: &str) -> Result<&'static str, DocError> {
    let gorilla = items
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mapped = openapi_type(gorilla)
        .ok_or_else(|| format!("'{key}' has items of unknown type '{gorilla}'"))?;
    items.insert("type".into(), mapped.into());
    Ok(mapped)
}

/// BFCL's `_func_doc_language_specific_pre_processing` (enabled by the
/// `language_hints` setting): a syntax hint on each description; for Java
/// and JavaScript every parameter becomes a string described by its type.
pub fn add_language_hints(functions: &mut [Value], language: &str) -> Result<(), DocError> {
    let hint = match language {
        "java" => " Note that the provided function is in Java 8 SDK syntax.",
        "javascript" => " Note that the provided function is in JavaScript syntax.",
        _ => " Note that the provided function is in Python 3 syntax.",
    };
    for doc in functions.iter_mut() {
        let item = doc
            .as_object_mut()
            .ok_or("a function doc is not an object")?;
        append(item, "description", hint)?;
        if language == "python" {
            continue;
        }
        let lang = if language == "java" {
            "Java"
        } else {
            "JavaScript"
        };
        let properties = item
            .get_mut("parameters")
            .and_then(|p| p.get_mut("properties"))
            .and_then(Value::as_object_mut)
            .ok_or("a function doc has no 'parameters.properties' object")?;
        for (key, value) in properties.iter_mut() {
            let prop = value
                .as_object_mut()
                .ok_or_else(|| format!("property '{key}' is not an object"))?;
            let ty = prop
                .get("type")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("property '{key}' has no type"))?
                .to_owned();
            if ty == "any" {
                append(
                    prop,
                    "description",
                    &format!(" This parameter can be of any type of {lang} object in string representation."),
                )?;
            } else {
                append(
                    prop,
                    "description",
                    &format!(" This is {lang} {ty} type parameter in string representation."),
                )?;
            }
            let listy = if language == "java" {
                ty == "ArrayList" || ty == "Array"
            } else {
                ty == "array"
            };
            if listy {
                let element = prop
                    .get("items")
                    .and_then(|i| i.get("type"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("list property '{key}' has no items.type"))?
                    .to_owned();
                append(
                    prop,
                    "description",
                    &format!(" The list elements are of type {element}; they are not in string representation."),
                )?;
                prop.shift_remove("items");
            }
            if language == "javascript" && ty == "dict" {
                if let Some(schema) = prop.shift_remove("properties") {
                    append(
                        prop,
                        "description",
                        &format!(
                            " The dictionary entries have the following schema; they are not in string representation. {}",
                            pysem::json::dumps(&schema, true)
                        ),
                    )?;
                }
            }
            prop.insert("type".into(), "string".into());
        }
    }
    Ok(())
}

/// `item[key] += suffix` on a string field.
fn append(item: &mut Map<String, Value>, key: &str, suffix: &str) -> Result<(), DocError> {
    match item.get_mut(key) {
        Some(Value::String(s)) => {
            s.push_str(suffix);
            Ok(())
        }
        _ => Err(format!("'{key}' is not a string")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn converts_like_bfcl_convert_to_tool() {
        let docs = vec![json!({"name": "spotify.play", "description": "Play.",
            "parameters": {"type": "dict", "properties": {
                "artist": {"type": "string", "description": "Who."},
                "ratio": {"type": "float", "description": "How much."},
                "tags": {"type": "tuple", "items": {"type": "float"}, "description": "T."},
                "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
                "opts": {"type": "dict", "properties": {"deep": {"type": "long"}}},
                "rows": {"type": "array", "items": {"type": "dict", "properties": {"x": {"type": "double", "description": "x."}}}},
                "untyped": {"description": "no type"},
                "odd": {"type": "mystery"}},
                "required": ["artist"]}})];
        let tools = convert(&docs).unwrap();
        assert_eq!(
            serde_json::to_string(&tools[0]).unwrap(),
            json!({"type": "function", "function": {"name": "spotify_play", "description": "Play.",
                "parameters": {"type": "object", "properties": {
                    "artist": {"type": "string", "description": "Who."},
                    "ratio": {"type": "number", "description": "How much. This is a float type value.", "format": "float"},
                    "tags": {"type": "array", "items": {"type": "number"}, "description": "T."},
                    "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
                    "opts": {"type": "object", "properties": {"deep": {"type": "integer"}}},
                    "rows": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "number", "description": "x."}}}},
                    "untyped": {"description": "no type", "type": "string"},
                    "odd": {"type": "string"}},
                    "required": ["artist"]}}})
            .to_string()
        );
        // The source docs are untouched (the conversion works on a copy).
        assert_eq!(docs[0]["name"], "spotify.play");
    }

    #[test]
    fn unknown_item_type_is_an_error_as_in_the_reference() {
        let docs = vec![json!({"name": "f", "description": "",
            "parameters": {"type": "dict", "properties": {"a": {"type": "array", "items": {"type": "weird"}}}}})];
        assert!(convert(&docs).unwrap_err().contains("weird"));
    }

    #[test]
    fn java_hints_turn_parameters_into_strings() {
        let mut docs = vec![json!({"name": "f", "description": "Do.",
            "parameters": {"type": "dict", "properties": {
                "m": {"type": "HashMap", "description": "map."},
                "l": {"type": "ArrayList", "description": "list.", "items": {"type": "String"}},
                "a": {"type": "any", "description": "thing."}}}})];
        add_language_hints(&mut docs, "java").unwrap();
        let p = &docs[0]["parameters"]["properties"];
        assert_eq!(
            docs[0]["description"],
            "Do. Note that the provided function is in Java 8 SDK syntax."
        );
        assert_eq!(
            p["m"],
            json!({"type": "string", "description": "map. This is Java HashMap type parameter in string representation."})
        );
        assert_eq!(
            p["l"],
            json!({"type": "string", "description": "list. This is Java ArrayList type parameter in string representation. The list elements are of type String; they are not in string representation."})
        );
        assert_eq!(
            p["a"]["description"],
            "thing. This parameter can be of any type of Java object in string representation."
        );
    }

    #[test]
    fn javascript_dict_schema_is_dumped_python_style() {
        let mut docs = vec![json!({"name": "f", "description": "Do.",
            "parameters": {"type": "dict", "properties": {
                "o": {"type": "dict", "description": "obj.", "properties": {"k": {"type": "String", "description": "é"}}}}}})];
        add_language_hints(&mut docs, "javascript").unwrap();
        assert_eq!(
            docs[0]["parameters"]["properties"]["o"]["description"],
            "obj. This is JavaScript dict type parameter in string representation. The dictionary entries have the following schema; they are not in string representation. {\"k\": {\"type\": \"String\", \"description\": \"\\u00e9\"}}"
        );
    }
}
