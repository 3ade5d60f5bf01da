package wasm

const mapNoReserve = 0
