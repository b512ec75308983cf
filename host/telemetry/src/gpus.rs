//! Accelerators read directly: a [`Gpus`] trait, with NVML
//! (`nvml-wrapper`, the driver library loaded at run time) behind it, so
//! the sampling, energy and error logic is tested with a double.

use crate::sample::GpuSample;
use crate::TelemetryError;

/// A set of GPUs that can be read (blocking calls).
pub trait Gpus: Send + Sync + 'static {
    /// The source's name in the results (`nvml`).
    fn name(&self) -> &str;
    /// The GPUs read, by index.
    fn indices(&self) -> &[u32];
    /// One GPU's power, energy counter, utilisation and memory in use; a
    /// quantity the GPU does not report is `None`, a failed read an error.
    fn read(&self, index: u32) -> Result<GpuSample, String>;
}

/// NVML through `nvml-wrapper`.
pub struct Nvml {
    nvml: nvml_wrapper::Nvml,
    indices: Vec<u32>,
}

impl Nvml {
    /// Loads NVML and checks the configured GPUs exist. On a machine
    /// without the NVIDIA driver library this is an error, before any
    /// request, never a zero reading.
    pub fn open(devices: Option<&[u32]>) -> Result<Self, TelemetryError> {
        let refused = |why: String| TelemetryError::Nvml(why);
        let nvml = nvml_wrapper::Nvml::init().map_err(|e| {
            refused(format!(
                "NVML is not available on this machine ({e}); [telemetry.nvml] needs the NVIDIA \
                 driver's libnvidia-ml.so.1 (remove [telemetry.nvml], or use a [[telemetry.scrape]] \
                 DCGM exporter or sweep.normalize.power_command)"
            ))
        })?;
        let count = nvml
            .device_count()
            .map_err(|e| refused(format!("NVML cannot count the GPUs: {e}")))?;
        let indices: Vec<u32> = match devices {
            Some(d) => d.to_vec(),
            None => (0..count).collect(),
        };
        if indices.is_empty() {
            return Err(refused("NVML sees no GPU on this machine".into()));
        }
        if let Some(missing) = indices.iter().find(|i| **i >= count) {
            return Err(refused(format!(
                "telemetry.nvml.devices names GPU {missing}, but NVML sees {count} GPU(s)"
            )));
        }
        Ok(Self { nvml, indices })
    }
}

impl Gpus for Nvml {
    fn name(&self) -> &str {
        "nvml"
    }

    fn indices(&self) -> &[u32] {
        &self.indices
    }

    fn read(&self, index: u32) -> Result<GpuSample, String> {
        use nvml_wrapper::error::NvmlError;
        let device = self
            .nvml
            .device_by_index(index)
            .map_err(|e| format!("GPU {index}: {e}"))?;
        // Not supported on this GPU: no value. Any other failure: an error.
        fn optional<T>(
            r: Result<T, NvmlError>,
            what: &str,
            index: u32,
        ) -> Result<Option<T>, String> {
            match r {
                Ok(v) => Ok(Some(v)),
                Err(NvmlError::NotSupported) => Ok(None),
                Err(e) => Err(format!("GPU {index} {what}: {e}")),
            }
        }
        Ok(GpuSample {
            index,
            power_w: optional(device.power_usage(), "power", index)?.map(|mw| f64::from(mw) / 1e3),
            energy_j: optional(device.total_energy_consumption(), "energy", index)?
                .map(|mj| mj as f64 / 1e3),
            util_pct: optional(device.utilization_rates(), "utilisation", index)?
                .map(|u| f64::from(u.gpu)),
            memory_used_mib: optional(device.memory_info(), "memory", index)?
                .map(|m| m.used as f64 / (1024.0 * 1024.0)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The real check: on a machine with NVIDIA GPUs NVML reads each of
    /// them (power and memory are reported by every datacenter GPU); on one
    /// without, opening it is an error that says why and what to do.
    #[test]
    fn nvml_reads_every_gpu_or_says_why_it_cannot() {
        match Nvml::open(None) {
            Ok(nvml) => {
                assert!(!nvml.indices().is_empty());
                for &i in nvml.indices() {
                    let g = nvml.read(i).unwrap();
                    assert!(g.power_w.is_some_and(|w| w > 0.0), "GPU {i}: {g:?}");
                    assert!(g.memory_used_mib.is_some(), "GPU {i}: {g:?}");
                    eprintln!("NVML GPU {i}: {g:?}");
                }
                let missing = nvml.indices().len() as u32;
                let e = Nvml::open(Some(&[missing])).err().unwrap().to_string();
                assert!(e.contains(&format!("names GPU {missing}")), "{e}");
            }
            Err(e) => {
                let e = e.to_string();
                eprintln!("no NVML here (the GPU check did not run): {e}");
                assert!(e.contains("NVML is not available on this machine"), "{e}");
                assert!(e.contains("[telemetry.nvml]"), "{e}");
            }
        }
    }
}
