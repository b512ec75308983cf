//! The Kubernetes objects that run a sharded run, as plain YAML for
//! `kubectl apply -f`: a ConfigMap with the config, a headless Service
//! through which the shards find shard 0 (the coordinator), and an Indexed
//! Job with one pod per shard. No operator, no custom resource, no broker.

use serde_json::{json, Value};

/// The port the coordinator listens on in the pods.
pub const PORT: u16 = 7070;

/// What the objects are made of.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// Object name prefix and run id (a DNS label).
    pub name: String,
    pub namespace: Option<String>,
    pub shards: u32,
    pub image: String,
    /// The run config's text (`config.toml` in the ConfigMap).
    pub config_toml: String,
    /// The Job's hard limit, s (the run, the merge and the fetch window).
    pub deadline_s: u64,
    /// How long shard 0 keeps serving the merged results, s.
    pub linger_s: u64,
    /// A PersistentVolumeClaim with the data directory, mounted read-only.
    pub data_claim: Option<String>,
    /// CPU and memory each shard requests (`"4"`, `"8Gi"`).
    pub cpu: Option<String>,
    pub memory: Option<String>,
}

/// A name Kubernetes accepts for these objects and their pods' DNS.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 52
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "--name {name:?}: use at most 52 lowercase letters, digits and '-', \
             not starting or ending with '-' (it names the Job, its pods and their DNS)"
        ))
    }
}

impl Manifest {
    /// The three objects, in apply order.
    pub fn objects(&self) -> Vec<Value> {
        let name = &self.name;
        let labels = json!({
            "app.kubernetes.io/name": "agentload",
            "app.kubernetes.io/instance": name,
        });
        let meta = |object: &str| {
            let mut m = json!({ "name": object, "labels": labels });
            if let Some(ns) = &self.namespace {
                m["namespace"] = json!(ns);
            }
            m
        };
        let config_map = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta(&format!("{name}-config")),
            "data": { "config.toml": self.config_toml },
        });
        let service = json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta(name),
            "spec": {
                "clusterIP": "None",
                "publishNotReadyAddresses": true,
                "selector": labels,
                "ports": [{ "name": "coordinator", "port": PORT, "targetPort": PORT, "protocol": "TCP" }],
            },
        });
        let coordinator = format!("http://{name}-0.{name}:{PORT}");
        let args = json!([
            "shard",
            "/etc/agentload/config.toml",
            "--shards",
            self.shards.to_string(),
            "--run-id",
            name,
            "--coordinator",
            coordinator,
            "--listen",
            format!("0.0.0.0:{PORT}"),
            "--out",
            "/results",
            "--linger-s",
            self.linger_s.to_string(),
        ]);
        let mut mounts = vec![
            json!({ "name": "config", "mountPath": "/etc/agentload", "readOnly": true }),
            json!({ "name": "results", "mountPath": "/results" }),
        ];
        let mut volumes = vec![
            json!({ "name": "config", "configMap": { "name": format!("{name}-config") } }),
            json!({ "name": "results", "emptyDir": {} }),
        ];
        let mut env = vec![json!({
            "name": "POD_NAME",
            "valueFrom": { "fieldRef": { "fieldPath": "metadata.name" } },
        })];
        if let Some(claim) = &self.data_claim {
            mounts.push(json!({ "name": "data", "mountPath": "/data", "readOnly": true }));
            volumes.push(json!({
                "name": "data",
                "persistentVolumeClaim": { "claimName": claim, "readOnly": true },
            }));
            env.push(json!({ "name": "AGENTLOAD_DATA_DIR", "value": "/data" }));
        }
        let mut container = json!({
            "name": "agentload",
            "image": self.image,
            "args": args,
            "env": env,
            "ports": [{ "name": "coordinator", "containerPort": PORT, "protocol": "TCP" }],
            "volumeMounts": mounts,
        });
        let mut requests = serde_json::Map::new();
        if let Some(cpu) = &self.cpu {
            requests.insert("cpu".into(), json!(cpu));
        }
        if let Some(memory) = &self.memory {
            requests.insert("memory".into(), json!(memory));
        }
        if !requests.is_empty() {
            container["resources"] = json!({ "requests": requests, "limits": requests });
        }
        let job = json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": meta(name),
            "spec": {
                "completionMode": "Indexed",
                "completions": self.shards,
                "parallelism": self.shards,
                // A retried shard would replay its load: a lost shard fails the run instead.
                "backoffLimit": 0,
                "activeDeadlineSeconds": self.deadline_s,
                "ttlSecondsAfterFinished": 3600,
                "template": {
                    "metadata": { "labels": labels },
                    "spec": {
                        "restartPolicy": "Never",
                        // With the headless Service: pod `{name}-{i}` is `{name}-{i}.{name}`.
                        "subdomain": name,
                        "topologySpreadConstraints": [{
                            "maxSkew": 1,
                            "topologyKey": "kubernetes.io/hostname",
                            "whenUnsatisfiable": "ScheduleAnyway",
                            "labelSelector": { "matchLabels": labels },
                        }],
                        "containers": [container],
                        "volumes": volumes,
                    },
                },
            },
        });
        vec![config_map, service, job]
    }

    /// The objects as one multi-document YAML stream.
    pub fn yaml(&self) -> Result<String, agentload_results::yaml::YamlError> {
        let mut out = String::new();
        for object in self.objects() {
            out.push_str(&agentload_results::yaml::to_yaml(&object)?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        Manifest {
            name: "al-run".into(),
            namespace: None,
            shards: 4,
            image: "agentload:test".into(),
            config_toml: "x = 1\n".into(),
            deadline_s: 7200,
            linger_s: 900,
            data_claim: Some("agentload-data".into()),
            cpu: Some("4".into()),
            memory: None,
        }
    }

    #[test]
    fn the_job_is_indexed_and_never_retried() {
        let objects = manifest().objects();
        let job = &objects[2]["spec"];
        assert_eq!(job["completionMode"], "Indexed");
        assert_eq!(job["completions"], 4);
        assert_eq!(job["parallelism"], 4);
        assert_eq!(job["backoffLimit"], 0);
        assert_eq!(job["template"]["spec"]["restartPolicy"], "Never");
        assert_eq!(objects[1]["spec"]["clusterIP"], "None");
        assert_eq!(objects[1]["spec"]["publishNotReadyAddresses"], true);
        let args = job["template"]["spec"]["containers"][0]["args"].to_string();
        assert!(args.contains("http://al-run-0.al-run:7070"), "{args}");
    }

    #[test]
    fn the_yaml_reads_back_as_the_objects() {
        let m = manifest();
        let text = m.yaml().unwrap();
        let docs: Vec<&str> = text
            .split("---\n")
            .filter(|d| !d.trim().is_empty())
            .collect();
        assert_eq!(docs.len(), 3);
        for (doc, object) in docs.iter().zip(m.objects()) {
            let back = agentload_results::yaml::from_yaml(&format!("---\n{doc}")).unwrap();
            assert_eq!(back, object);
        }
    }

    #[test]
    fn names_that_break_dns_are_refused() {
        assert!(check_name("run-1").is_ok());
        for bad in ["Run", "-a", "a-", "", "a_b", &"a".repeat(53)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
