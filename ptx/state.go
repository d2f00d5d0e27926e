package ptx

// State is the family of counts held in device memory (state.cu; cpu/state.go): a session's
// random draws and an optimizer's step counts, advanced on the device.
const State Module = "state"

// CounterAdd adds inc to n counts: counter_add(count, n, inc), any grid-stride launch.
var CounterAdd = newKernel(State, "counter_add")
