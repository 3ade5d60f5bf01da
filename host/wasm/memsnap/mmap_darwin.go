package memsnap

const mapNoReserve = 0
