-- Receipt states in the order they may move (DESIGN: a receipt never goes back): every terminal state ranks 3.
local RECEIPT_RANK = {queued = 0, delivered = 1, started = 2, completed = 3, rejected = 3, unknown = 3}
