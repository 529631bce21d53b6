-- Answers the rank of ARGV[1] from the shared receipt rank, included twice to show it is inlined once.
--!include receipt-rank.lua
--!include receipt-rank.lua
return RECEIPT_RANK[ARGV[1]] or -1
