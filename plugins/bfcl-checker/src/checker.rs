//! Port of BFCL v4's single-turn AST checker
//! (`eval_checker/ast_eval/ast_checker.py`): dispatch by category, the
//! simple / multiple / greedy parallel checkers, the one-level type checker,
//! and the string, list, dict and list-of-dict value checkers, with the
//! reference's error types and messages.
//!
//! Where the Python code would raise (a missing key in a function doc, an
//! unsupported Java type, ...) the port returns the exception as [`PyErr`].

use crate::convert_java::{java_type, java_type_converter};
use crate::convert_js::{js_type, js_type_converter};
use pysem::value::{
    contains, getitem, index, iterate, py_eq, py_len, str_repr, PyErr, PyResult, PyType, Value,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    Python,
    Java,
    JavaScript,
}

impl Language {
    /// The reference picks the language from the subset name.
    pub fn for_subset(subset: &str) -> Language {
        match subset {
            "simple_java" => Language::Java,
            "simple_javascript" => Language::JavaScript,
            _ => Language::Python,
        }
    }
}

/// One decoded model call `{name: args}`. The name is whatever the extractor
/// produced (normally a string); `args` is a dict after the format check.
#[derive(Debug, Clone)]
pub struct Call {
    pub name: Value,
    pub args: Value,
}

impl Call {
    /// The call as the reference's `{name: args}` dict, for messages.
    pub fn as_value(&self) -> Value {
        let key = match &self.name {
            Value::Str(s) => s.clone(),
            other => other.repr(),
        };
        Value::Dict(vec![(key, self.args.clone())])
    }
}

/// A checker result dict: `valid`, `error` (strings, or dicts for the
/// parallel checker) and `error_type`.
#[derive(Debug, Clone)]
pub struct Check {
    pub valid: bool,
    pub error: Vec<Value>,
    pub error_type: Option<String>,
    pub is_variable: bool,
}

impl Check {
    fn ok() -> Check {
        Check {
            valid: true,
            error: Vec::new(),
            error_type: None,
            is_variable: false,
        }
    }

    fn fail(message: impl Into<String>, error_type: &str) -> Check {
        Check {
            valid: false,
            error: vec![Value::Str(message.into())],
            error_type: Some(error_type.into()),
            is_variable: false,
        }
    }
}

/// How function names are compared: the reference's model
/// `gpt-4o-2024-11-20-FC` has `underscore_to_dot`, so `a.b` is expected as `a_b`.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub language: Language,
    pub underscore_to_dot: bool,
    /// Not BFCL: promote int elements of a Python array whose `items.type`
    /// is `float` (the fix for BFCL issue #1049; false in the reference).
    pub int_in_float_arrays: bool,
}

/// `ast_checker(func_description, model_output, possible_answer, language,
/// test_category, model_name)`.
pub fn ast_checker(
    functions: &Value,
    output: &[Call],
    possible_answer: &Value,
    category: &str,
    opts: Options,
) -> PyResult<Check> {
    if category.contains("parallel") {
        parallel_no_order(functions, output, possible_answer, opts)
    } else if category.contains("multiple") {
        multiple(functions, output, possible_answer, opts)
    } else {
        if output.len() != 1 {
            return Ok(Check::fail(
                "Wrong number of functions.",
                "simple_function_checker:wrong_count",
            ));
        }
        simple(
            &*index(functions, 0)?,
            &output[0],
            &*index(possible_answer, 0)?,
            opts,
        )
    }
}

fn find_description<'a>(functions: &'a Value, name: &Value) -> PyResult<&'a Value> {
    static NONE: Value = Value::None;
    match functions {
        Value::List(docs) => {
            for doc in docs {
                if py_eq(getitem(doc, "name")?, name) {
                    return Ok(doc);
                }
            }
            Ok(&NONE)
        }
        other => Ok(other),
    }
}

/// `list(d.keys())[0]` / `list(d.values())[0]` of a ground-truth call.
fn first_entry(call: &Value) -> PyResult<(&str, &Value)> {
    match call {
        Value::Dict(items) => items
            .first()
            .map(|(k, v)| (k.as_str(), v))
            .ok_or_else(|| PyErr::new("IndexError", "list index out of range")),
        other => Err(PyErr::new(
            "AttributeError",
            format!("'{}' object has no attribute 'keys'", other.type_name()),
        )),
    }
}

fn multiple(functions: &Value, output: &[Call], answers: &Value, opts: Options) -> PyResult<Check> {
    if output.len() != py_len(answers)? {
        return Ok(Check::fail(
            "Wrong number of functions.",
            "multiple_function_checker:wrong_count",
        ));
    }
    let gt0 = index(answers, 0)?;
    let (name, _) = first_entry(&gt0)?;
    let doc = find_description(functions, &Value::str(name))?;
    simple(doc, &output[0], &gt0, opts)
}

fn parallel_no_order(
    functions: &Value,
    output: &[Call],
    answers: &Value,
    opts: Options,
) -> PyResult<Check> {
    let n = py_len(answers)?;
    if output.len() != n {
        return Ok(Check::fail(
            "Wrong number of functions.",
            "parallel_function_checker_no_order:wrong_count",
        ));
    }
    let mut matched: Vec<usize> = Vec::new();
    // Python keeps `result` from the previous ground-truth entry when every
    // output is already matched; mirror that.
    let mut result: Option<Check> = None;
    for i in 0..n {
        let gt = index(answers, i)?;
        let (name, _) = first_entry(&gt)?;
        let doc = find_description(functions, &Value::str(name))?;
        let mut all_errors: Vec<Value> = Vec::new();
        for (j, call) in output.iter().enumerate() {
            if matched.contains(&j) {
                continue;
            }
            let r = simple(doc, call, &gt, opts)?;
            if r.valid {
                matched.push(j);
                result = Some(r);
                break;
            }
            all_errors.push(Value::Dict(vec![(
                format!("Model Result Index {j}"),
                Value::Dict(vec![
                    ("sub_error".into(), Value::List(r.error.clone())),
                    (
                        "sub_error_type".into(),
                        r.error_type.clone().map_or(Value::None, Value::Str),
                    ),
                    ("model_output_item".into(), call.as_value()),
                    ("possible_answer_item".into(), gt.clone().into_owned()),
                ]),
            )]));
            result = Some(r);
        }
        let Some(last) = &result else {
            return Err(PyErr::new(
                "UnboundLocalError",
                "local variable 'result' referenced before assignment",
            ));
        };
        if !last.valid {
            let considered: Vec<String> = (0..output.len())
                .filter(|j| !matched.contains(j))
                .map(|j| j.to_string())
                .collect();
            all_errors.insert(
                0,
                Value::Str(format!(
                    "Could not find a matching function among index [{}] of model output for index {i} of possible answers.",
                    considered.join(", ")
                )),
            );
            return Ok(Check {
                valid: false,
                error: all_errors,
                error_type: Some("parallel_function_checker_no_order:cannot_find_match".into()),
                is_variable: false,
            });
        }
    }
    Ok(Check::ok())
}

fn python_type(t: &str) -> Option<PyType> {
    Some(match t {
        "string" | "any" => PyType::Str,
        "integer" => PyType::Int,
        "float" => PyType::Float,
        "boolean" => PyType::Bool,
        "array" | "tuple" => PyType::List,
        "dict" => PyType::Dict,
        _ => return None,
    })
}

fn key_error(key: &Value) -> PyErr {
    PyErr::new("KeyError", key.repr())
}

/// A type name from a function doc, as a mapping key.
fn type_key(v: &Value) -> PyResult<&str> {
    match v {
        Value::Str(s) => Ok(s),
        Value::List(_) | Value::Dict(_) => Err(PyErr::new(
            "TypeError",
            format!("unhashable type: '{}'", v.type_name()),
        )),
        other => Err(key_error(other)),
    }
}

fn simple(doc: &Value, call: &Call, gt_call: &Value, opts: Options) -> PyResult<Check> {
    let (_, possible_answer) = match gt_call {
        Value::Dict(_) => first_entry(gt_call)?,
        other => {
            return Err(PyErr::new(
                "AttributeError",
                format!("'{}' object has no attribute 'values'", other.type_name()),
            ))
        }
    };
    let func_name = getitem(doc, "name")?;
    let parameters = getitem(doc, "parameters")?;
    let param_details = getitem(parameters, "properties")?;
    let required = getitem(parameters, "required")?;

    let renamed;
    let func_name = match func_name {
        Value::Str(s) if opts.underscore_to_dot && s.contains('.') => {
            renamed = Value::Str(s.replace('.', "_"));
            &renamed
        }
        other => other,
    };
    if !py_eq(&call.name, func_name) {
        return Ok(Check::fail(
            format!(
                "Function name {} not found in model output.",
                func_name.repr()
            ),
            "simple_function_checker:wrong_func_name",
        ));
    }
    let model_params = &call.args;
    let Value::Dict(model_items) = model_params else {
        return Err(PyErr::new(
            "AttributeError",
            format!(
                "'{}' object has no attribute 'items'",
                model_params.type_name()
            ),
        ));
    };

    for param in iterate(required)? {
        if !contains(model_params, &param)? {
            return Ok(Check::fail(
                format!("Missing required parameter: {}.", param.repr()),
                "simple_function_checker:missing_required",
            ));
        }
    }

    for (param, value) in model_items {
        let p = Value::Str(param.clone());
        if !contains(param_details, &p)? || !contains(possible_answer, &p)? {
            return Ok(Check::fail(
                format!("Unexpected parameter: {}.", str_repr(param)),
                "simple_function_checker:unexpected_param",
            ));
        }
        let full = getitem(param_details, param)?;
        let type_value = getitem(full, "type")?;
        let type_desc = type_key(type_value)?;
        let mut value = value.clone();
        let mut nested: Option<PyType> = None;
        let expected = match opts.language {
            Language::Java | Language::JavaScript => {
                let (lookup, label, kind): (fn(&str) -> Option<PyType>, _, _) =
                    if opts.language == Language::Java {
                        (java_type, "type_error:java", "java")
                    } else {
                        (js_type, "type_error:js", "js")
                    };
                let expected = lookup(type_desc).ok_or_else(|| key_error(type_value))?;
                let Value::Str(text) = &value else {
                    return Ok(Check::fail(
                        format!(
                            "Incorrect type for parameter {}. Expected type String, got {}. Parameter value: {}.",
                            str_repr(param),
                            value.type_name(),
                            value.repr()
                        ),
                        label,
                    ));
                };
                let convert = if kind == "java" {
                    java_type_converter
                } else {
                    js_type_converter
                };
                value = if matches!(type_desc, "Array" | "ArrayList" | "array") {
                    let nested_value = getitem(getitem(full, "items")?, "type")?;
                    let nested_type = type_key(nested_value)?;
                    nested = Some(lookup(nested_type).ok_or_else(|| key_error(nested_value))?);
                    convert(text, type_desc, Some(nested_type))?
                } else {
                    convert(text, type_desc, None)?
                };
                expected
            }
            Language::Python => {
                let expected = python_type(type_desc).ok_or_else(|| key_error(type_value))?;
                if matches!(type_desc, "array" | "tuple") {
                    let nested_value = getitem(getitem(full, "items")?, "type")?;
                    let nested_type = type_key(nested_value)?;
                    nested = Some(python_type(nested_type).ok_or_else(|| key_error(nested_value))?);
                }
                expected
            }
        };

        // int -> float, top level only (bool is not int here).
        if opts.language == Language::Python && type_desc == "float" {
            if let Value::Int(i) = &value {
                value = Value::Float(i.to_f64().ok_or_else(|| {
                    PyErr::new("OverflowError", "int too large to convert to float")
                })?);
            }
        }

        // Not BFCL (issue #1049 fix, off by default): the same promotion for
        // the elements of a float array; an int too large for a float stays.
        if opts.int_in_float_arrays
            && opts.language == Language::Python
            && nested == Some(PyType::Float)
        {
            if let Value::List(items) = &value {
                value = Value::List(items.iter().map(promote_int).collect());
            }
        }

        let candidates = getitem(possible_answer, param)?;
        let tc = type_checker(param, &value, candidates, type_desc, expected, nested)?;
        if !tc.valid {
            return Ok(tc);
        }
        if !tc.is_variable {
            let sub = if expected == PyType::Dict {
                Some(dict_checker(&value, candidates)?)
            } else if expected == PyType::List && nested == Some(PyType::Dict) {
                Some(list_dict_checker(&value, candidates)?)
            } else if expected == PyType::Str {
                Some(string_checker(param, &value, candidates)?)
            } else if expected == PyType::List {
                Some(list_checker(param, &value, candidates)?)
            } else {
                None
            };
            if let Some(sub) = sub {
                if !sub.valid {
                    return Ok(sub);
                }
                continue;
            }
        }
        if !contains(candidates, &value)? {
            return Ok(Check::fail(
                format!(
                    "Invalid value for parameter {}: {}. Expected one of {}.",
                    str_repr(param),
                    value.repr(),
                    candidates.repr()
                ),
                "value_error:others",
            ));
        }
    }

    for param in iterate(possible_answer)? {
        let key = param.as_str().unwrap_or_default();
        if !contains(model_params, &param)?
            && !contains(getitem(possible_answer, key)?, &Value::str(""))?
        {
            return Ok(Check::fail(
                format!(
                    "Optional parameter {} not provided and not marked as optional.",
                    param.repr()
                ),
                "simple_function_checker:missing_optional",
            ));
        }
    }
    Ok(Check::ok())
}

/// An int as the float Python's `float()` makes of it; anything else as is.
fn promote_int(v: &Value) -> Value {
    match v {
        Value::Int(i) => i.to_f64().map_or_else(|| v.clone(), Value::Float),
        other => other.clone(),
    }
}

/// `get_possible_answer_type`: the type of the first candidate that is not `""`.
fn possible_answer_type(candidates: &Value) -> PyResult<Option<PyType>> {
    Ok(iterate(candidates)?
        .iter()
        .find(|c| !py_eq(c, &Value::str("")))
        .map(Value::py_type))
}

fn type_checker(
    param: &str,
    value: &Value,
    candidates: &Value,
    type_desc: &str,
    expected: PyType,
    nested: Option<PyType>,
) -> PyResult<Check> {
    let mut result = Check {
        valid: true,
        error: Vec::new(),
        error_type: Some("type_error:simple".into()),
        is_variable: false,
    };
    let pa_type = possible_answer_type(candidates)?;
    let is_variable = matches!(pa_type, Some(t) if t != expected);

    if value.py_type() == expected {
        let Some(inner) = nested else {
            result.is_variable = is_variable;
            return Ok(result);
        };
        for candidate in iterate(candidates)? {
            let mut flag = true;
            if let Value::List(_) = candidate {
                for item in iterate(value)? {
                    let r =
                        type_checker(param, &item, &candidate, &inner.class_str(), inner, None)?;
                    if !r.valid {
                        flag = false;
                        break;
                    }
                }
            }
            if flag {
                return Ok(Check {
                    valid: true,
                    error: Vec::new(),
                    error_type: None,
                    is_variable,
                });
            }
        }
        result.valid = false;
        result.error = vec![Value::Str(format!(
            "Nested type checking failed for parameter {}. Expected outer type {} with inner type {}. Parameter value: {}.",
            str_repr(param),
            type_desc,
            inner.class_str(),
            value.repr()
        ))];
        result.error_type = Some("type_error:nested".into());
    }

    if let Some(t) = pa_type {
        if value.py_type() == t {
            result.is_variable = true;
            return Ok(result);
        }
    }
    result.valid = false;
    result.error.push(Value::Str(format!(
        "Incorrect type for parameter {}. Expected type {}, got {}. Parameter value: {}.",
        str_repr(param),
        type_desc,
        value.type_name(),
        value.repr()
    )));
    result.error_type = Some("type_error:simple".into());
    Ok(result)
}

/// `standardize_string`: drop ` ,./-_*^`, lowercase, `'` -> `"`.
pub fn standardize_string(s: &str) -> String {
    let kept: String = s
        .chars()
        .filter(|c| !matches!(c, ' ' | ',' | '.' | '/' | '-' | '_' | '*' | '^'))
        .collect();
    kept.to_lowercase().replace('\'', "\"")
}

fn standardized(v: &Value) -> Value {
    match v {
        Value::Str(s) => Value::Str(standardize_string(s)),
        other => other.clone(),
    }
}

/// `[x[i] for i in range(len(x))]`, standardizing strings.
fn standardized_items(v: &Value) -> PyResult<Vec<Value>> {
    (0..py_len(v)?)
        .map(|i| index(v, i).map(|x| standardized(&x)))
        .collect()
}

fn string_checker(param: &str, value: &Value, candidates: &Value) -> PyResult<Check> {
    let model = standardized(value);
    let options: Vec<Value> = (0..py_len(candidates)?)
        .map(|i| index(candidates, i))
        .collect::<PyResult<Vec<_>>>()?
        .iter()
        .filter(|c| matches!(c.as_ref(), Value::Str(_)))
        .map(|c| standardized(c))
        .collect();
    if !options.iter().any(|o| py_eq(o, &model)) {
        return Ok(Check::fail(
            format!(
                "Invalid value for parameter {}: {}. Expected one of {}. Case insensitive.",
                str_repr(param),
                value.repr(),
                candidates.repr()
            ),
            "value_error:string",
        ));
    }
    Ok(Check::ok())
}

fn list_checker(param: &str, value: &Value, candidates: &Value) -> PyResult<Check> {
    let model = Value::List(iterate(value)?.iter().map(standardized).collect());
    let mut options = Vec::new();
    for i in 0..py_len(candidates)? {
        options.push(Value::List(standardized_items(&*index(candidates, i)?)?));
    }
    if !options.iter().any(|o| py_eq(o, &model)) {
        return Ok(Check::fail(
            format!(
                "Invalid value for parameter {}: {}. Expected one of {}.",
                str_repr(param),
                value.repr(),
                candidates.repr()
            ),
            "value_error:list/tuple",
        ));
    }
    Ok(Check::ok())
}

fn dict_items(v: &Value) -> PyResult<&[(String, Value)]> {
    match v {
        Value::Dict(items) => Ok(items),
        other => Err(PyErr::new(
            "AttributeError",
            format!("'{}' object has no attribute 'items'", other.type_name()),
        )),
    }
}

fn dict_checker(value: &Value, candidates: &Value) -> PyResult<Check> {
    let unclear = || Check {
        valid: false,
        error: Vec::new(),
        error_type: Some("dict_checker:unclear".into()),
        is_variable: false,
    };
    let mut result = unclear();
    for i in 0..py_len(candidates)? {
        let candidate = index(candidates, i)?;
        if py_eq(&candidate, &Value::str("")) {
            continue;
        }
        result = unclear();
        let mut flag = true;
        for (key, v) in dict_items(value)? {
            if !contains(&candidate, &Value::Str(key.clone()))? {
                result.error.push(Value::Str(format!(
                    "Unexpected dict key parameter: '{key}'."
                )));
                result.error_type = Some("value_error:dict_key".into());
                flag = false;
                break;
            }
            let std_value = standardized(v);
            let options = standardized_items(getitem(&candidate, key)?)?;
            if !options.iter().any(|o| py_eq(o, &std_value)) {
                result.error.push(Value::Str(format!(
                    "Invalid value for parameter {}: {}. Expected one of {}.",
                    str_repr(key),
                    v.repr(),
                    Value::List(options).repr()
                )));
                result.error_type = Some("value_error:dict_value".into());
                flag = false;
                break;
            }
        }
        for (key, options) in dict_items(&candidate)? {
            if !contains(value, &Value::Str(key.clone()))? && !contains(options, &Value::str(""))? {
                result
                    .error
                    .push(Value::Str(format!("Missing dict key parameter: '{key}'.")));
                result.error_type = Some("value_error:dict_key".into());
                flag = false;
                break;
            }
        }
        if flag {
            return Ok(Check::ok());
        }
    }
    Ok(result)
}

fn list_dict_checker(value: &Value, candidates: &Value) -> PyResult<Check> {
    let mut result = Check {
        valid: false,
        error: Vec::new(),
        error_type: Some("list_dict_checker:unclear".into()),
        is_variable: false,
    };
    let n = py_len(value)?;
    for ai in 0..py_len(candidates)? {
        let candidate = index(candidates, ai)?;
        if n != py_len(&candidate)? {
            result = Check::fail(
                "Wrong number of dictionaries in the list.",
                "value_error:list_dict_count",
            );
            continue;
        }
        let mut flag = true;
        for di in 0..n {
            result = dict_checker(
                &*index(value, di)?,
                &Value::List(vec![index(&candidate, di)?.into_owned()]),
            )?;
            if !result.valid {
                flag = false;
                break;
            }
        }
        if flag {
            return Ok(Check::ok());
        }
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pysem::json::loads;

    const PY: Options = Options {
        language: Language::Python,
        underscore_to_dot: true,
        int_in_float_arrays: false,
    };
    const PY_FIXED: Options = Options {
        int_in_float_arrays: true,
        ..PY
    };

    fn run(funcs: &str, out: &str, gt: &str, cat: &str, opts: Options) -> Check {
        let funcs = loads(funcs).unwrap();
        let gt = loads(gt).unwrap();
        let calls: Vec<Call> = match loads(out).unwrap() {
            Value::List(items) => items
                .into_iter()
                .map(|c| match c {
                    Value::Dict(mut kv) => {
                        let (k, v) = kv.remove(0);
                        Call {
                            name: Value::Str(k),
                            args: v,
                        }
                    }
                    _ => panic!(),
                })
                .collect(),
            _ => panic!(),
        };
        ast_checker(&funcs, &calls, &gt, cat, opts).unwrap()
    }

    const TRI: &str = r#"[{"name": "calc.area", "parameters": {"type": "dict", "properties": {"base": {"type": "integer"}, "height": {"type": "float"}, "unit": {"type": "string"}, "nums": {"type": "array", "items": {"type": "float"}}}, "required": ["base", "height"]}}]"#;
    const GT: &str = r#"[{"calc.area": {"base": [10], "height": [5.0], "unit": ["units", ""], "nums": [[1.0, 2.0], ""]}}]"#;

    #[test]
    fn simple_verdicts() {
        let t = |out: &str| run(TRI, out, GT, "simple_python", PY);
        assert!(t(r#"[{"calc_area": {"base": 10, "height": 5}}]"#).valid);
        assert!(t(r#"[{"calc_area": {"base": 10, "height": 5, "unit": "Units."}}]"#).valid);
        let c = t(r#"[{"calc_area": {"base": 10.0, "height": 5}}]"#);
        assert_eq!(c.error_type.as_deref(), Some("type_error:simple"));
        let c = t(r#"[{"calc_area": {"base": 10, "height": 5, "nums": [1, 2]}}]"#);
        assert!(c.valid, "a \"\" candidate skips the nested check");
        let c = t(r#"[{"calc_area": {"base": 10}}]"#);
        assert_eq!(
            c.error_type.as_deref(),
            Some("simple_function_checker:missing_required")
        );
        let c = t(r#"[{"calc.area": {"base": 10, "height": 5}}]"#);
        assert_eq!(
            c.error_type.as_deref(),
            Some("simple_function_checker:wrong_func_name")
        );
        let c = t(r#"[{"calc_area": {"base": 11, "height": 5}}]"#);
        assert_eq!(c.error_type.as_deref(), Some("value_error:others"));
        assert_eq!(
            c.error[0].as_str().unwrap(),
            "Invalid value for parameter 'base': 11. Expected one of [10]."
        );
        let c = t(r#"[{"calc_area": {"base": 10, "height": 5, "x": 1}}]"#);
        assert_eq!(
            c.error_type.as_deref(),
            Some("simple_function_checker:unexpected_param")
        );
        let c = t(r#"[]"#);
        assert_eq!(
            c.error_type.as_deref(),
            Some("simple_function_checker:wrong_count")
        );
        let c = t(r#"[{"calc_area": {"base": true, "height": 5}}]"#);
        assert_eq!(c.error_type.as_deref(), Some("type_error:simple"));
    }

    #[test]
    fn nested_float_rejects_ints() {
        let gt = r#"[{"calc.area": {"base": [10], "height": [5.0], "nums": [[1.0, 2.0]]}}]"#;
        let c = run(
            TRI,
            r#"[{"calc_area": {"base": 10, "height": 5, "nums": [1, 2]}}]"#,
            gt,
            "simple",
            PY,
        );
        assert_eq!(c.error_type.as_deref(), Some("type_error:nested"));
    }

    #[test]
    fn int_in_float_arrays_fix() {
        // Issue #1049's example, plus a tuple and a mixed list.
        let funcs = r#"[{"name": "avg", "parameters": {"type": "dict", "properties": {"numbers": {"type": "array", "items": {"type": "float"}}, "pair": {"type": "tuple", "items": {"type": "float"}}, "ks": {"type": "array", "items": {"type": "integer"}}}, "required": ["numbers"]}}]"#;
        let gt = r#"[{"avg": {"numbers": [[12.0, 15.0]], "pair": [[1.5, 2.0], ""], "ks": [[1, 2], ""]}}]"#;
        let t = |out: &str, opts| run(funcs, out, gt, "simple_python", opts);
        let ints = r#"[{"avg": {"numbers": [12, 15]}}]"#;
        assert_eq!(t(ints, PY).error_type.as_deref(), Some("type_error:nested"));
        assert!(t(ints, PY_FIXED).valid);
        // Judged by value once promoted.
        let c = t(r#"[{"avg": {"numbers": [12, 16]}}]"#, PY_FIXED);
        assert_eq!(c.error_type.as_deref(), Some("value_error:list/tuple"));
        assert!(
            t(
                r#"[{"avg": {"numbers": [12.0, 15], "pair": [1.5, 2]}}]"#,
                PY_FIXED
            )
            .valid
        );
        // Only ints are promoted: bools and strings still fail the type check.
        for bad in [
            r#"[{"avg": {"numbers": [true, 15]}}]"#,
            r#"[{"avg": {"numbers": ["12", 15]}}]"#,
        ] {
            assert_eq!(
                t(bad, PY_FIXED).error_type.as_deref(),
                Some("type_error:nested"),
                "{bad}"
            );
        }
        // Integer arrays are untouched (floats there still fail).
        let gt_ks = r#"[{"avg": {"numbers": [[12.0, 15.0]], "ks": [[1, 2]]}}]"#;
        let c = run(
            funcs,
            r#"[{"avg": {"numbers": [12, 15], "ks": [1.0, 2]}}]"#,
            gt_ks,
            "simple_python",
            PY_FIXED,
        );
        assert_eq!(c.error_type.as_deref(), Some("type_error:nested"));
        // A scalar where an array is expected still fails.
        assert!(!t(r#"[{"avg": {"numbers": 12}}]"#, PY_FIXED).valid);
    }

    #[test]
    fn parallel_is_greedy_and_order_free() {
        let funcs = r#"[{"name": "f", "parameters": {"properties": {"a": {"type": "string"}}, "required": ["a"]}}]"#;
        let gt = r#"[{"f": {"a": ["x"]}}, {"f": {"a": ["y"]}}]"#;
        assert!(
            run(
                funcs,
                r#"[{"f": {"a": "Y"}}, {"f": {"a": "x"}}]"#,
                gt,
                "parallel",
                PY
            )
            .valid
        );
        let c = run(
            funcs,
            r#"[{"f": {"a": "x"}}, {"f": {"a": "x"}}]"#,
            gt,
            "parallel",
            PY,
        );
        assert_eq!(
            c.error_type.as_deref(),
            Some("parallel_function_checker_no_order:cannot_find_match")
        );
        assert_eq!(
            c.error[0].as_str().unwrap(),
            "Could not find a matching function among index [1] of model output for index 1 of possible answers."
        );
        let c = run(
            funcs,
            r#"[{"f": {"a": "x"}}]"#,
            gt,
            "live_parallel_multiple",
            PY,
        );
        assert_eq!(
            c.error_type.as_deref(),
            Some("parallel_function_checker_no_order:wrong_count")
        );
    }

    #[test]
    fn dict_and_list_of_dict() {
        let funcs = r#"[{"name": "g", "parameters": {"properties": {"d": {"type": "dict"}, "l": {"type": "array", "items": {"type": "dict"}}}, "required": []}}]"#;
        let gt = r#"[{"g": {"d": [{"k": ["v"], "o": ["", 1]}], "l": [[{"a": [1]}], ""]}}]"#;
        assert!(run(funcs, r#"[{"g": {"d": {"k": "V"}}}]"#, gt, "multiple", PY).valid);
        let c = run(funcs, r#"[{"g": {"d": {"k": "w"}}}]"#, gt, "multiple", PY);
        assert_eq!(c.error_type.as_deref(), Some("value_error:dict_value"));
        let c = run(funcs, r#"[{"g": {"d": {"z": "v"}}}]"#, gt, "multiple", PY);
        assert_eq!(c.error_type.as_deref(), Some("value_error:dict_key"));
        assert!(
            run(
                funcs,
                r#"[{"g": {"d": {"k": "v"}, "l": [{"a": 1.0}]}}]"#,
                gt,
                "multiple",
                PY
            )
            .valid
        );
        // The "" candidate is tried last and leaves its count error behind.
        let c = run(
            funcs,
            r#"[{"g": {"d": {"k": "v"}, "l": [{"a": 2}]}}]"#,
            gt,
            "multiple",
            PY,
        );
        assert_eq!(c.error_type.as_deref(), Some("value_error:list_dict_count"));
    }

    #[test]
    fn java_values_must_be_strings() {
        let funcs = r#"[{"name": "j", "parameters": {"properties": {"n": {"type": "long"}, "xs": {"type": "ArrayList", "items": {"type": "String"}}}, "required": ["n"]}}]"#;
        let gt = r#"[{"j": {"n": [42], "xs": [["a", "b"], ""]}}]"#;
        let java = Options {
            language: Language::Java,
            ..PY
        };
        assert!(run(funcs, r#"[{"j": {"n": "42L"}}]"#, gt, "simple_java", java).valid);
        let c = run(funcs, r#"[{"j": {"n": 42}}]"#, gt, "simple_java", java);
        assert_eq!(c.error_type.as_deref(), Some("type_error:java"));
        let c = run(funcs, r#"[{"j": {"n": "42"}}]"#, gt, "simple_java", java);
        assert_eq!(c.error_type.as_deref(), Some("type_error:simple"));
        let ok = r#"[{"j": {"n": "42L", "xs": "new ArrayList<>(Arrays.asList(\"A\", \"b\"))"}}]"#;
        assert!(run(funcs, ok, gt, "simple_java", java).valid);
    }

    #[test]
    fn standardize() {
        assert_eq!(standardize_string("April 1, 2024"), "april12024");
        assert_eq!(standardize_string("It's_A-B/C*D^E.\t"), "it\"sabcde\t");
    }
}
