;; Test fixture: a workload component built against an older, never
;; supported contract, `agentload:plugin@0.0.1`. It imports that version's
;; `host` interface and exports its `workload` interface (one `describe`
;; function), as a plugin compiled with an old SDK would.
;;
;; The host must refuse it before instantiating it, naming the plugin, the
;; version it was built against and the supported ones (tests/all/authoring.rs).
;; old_wit.wasm is this file assembled:
;;   wasm-tools parse old_wit.wat -o old_wit.wasm
(component
  (import "agentload:plugin/host@0.0.1" (instance $host
    (export "log" (func (param "message" string)))
  ))
  (core module $m
    (func (export "describe") (result i32) i32.const 1)
  )
  (core instance $i (instantiate $m))
  (func $describe (result u32) (canon lift (core func $i "describe")))
  (instance $workload (export "describe" (func $describe)))
  (export "agentload:plugin/workload@0.0.1" (instance $workload))
)
