# Reuse of repeated work (sim::StepOptions::reuse): every case runs `decode` with reuse and with
# --no-reuse and compares the JSON results byte for byte but for the wall_time section (reuse_check.py).
# `some`: reuse must apply (fewer tasks executed than represented); `none`: the symmetry is broken, every
# task runs; `any`: either.
set(REUSE_CHECK python3 ${CMAKE_CURRENT_SOURCE_DIR}/reuse_check.py ${WAFER_EMU} ${OUT}/reuse)
set(TINY_R --wafer tiny --model tiny-llama --context 64)
set(TINY6 --wafer tiny --model ${DATA}/reuse_6_layers.json --context 64)
function(reuse_test name expect)
  add_test(NAME cli.reuse_${name} COMMAND ${REUSE_CHECK} ${name} ${expect} -- ${ARGN})
endfunction()
# A pipeline of wafers: the middle wafers of 4 run the same step (same programs, other layer names).
reuse_test(wafers4 some ${TINY_R} --wafers 4)
reuse_test(wafers4_cycle some ${TINY_R} --wafers 4 --fidelity cycle)
reuse_test(wafers4_defects some ${TINY_R} --wafers 4 --density 20 --seed 3)
# With a trace the wafers are each emulated (the trace chooses the tiles it keeps wafer by wafer); layers
# are still copied where they repeat (below): the same answer and the same trace.
reuse_test(wafers4_trace none ${TINY_R} --wafers 4 --trace TRACE)
reuse_test(wafers6_6layers some ${TINY6} --wafers 6)
# Five wafers of 8 layers: wafers 2 and 3 are copies of wafer 1, which copies layers of its own; a copied
# wafer's own costs (tasks, layers, seconds in cuts) are 0 in wall_time.per_wafer (decode_pair.py).
reuse_test(small40_wafers5 some --wafer small --model ${DATA}/reuse_small_40_layers.json --context 512 --wafers 5)
# Two wafers: the first holds the embedding, the second the head: nothing repeats.
reuse_test(wafers2 none ${TINY_R} --wafers 2)
reuse_test(wafers2_cycle none ${TINY_R} --wafers 2 --fidelity cycle)
# Streamed weights share the MemoryX port between wafers: a wafer that streams is never reused (the tiny
# model fits resident, so nothing streams here and the middle wafers may be reused).
reuse_test(wafers4_stream any ${TINY_R} --wafers 4 --weights stream)
# One wafer. Layers time-multiplexed on the same tiles (square, whole-wafer with meshgemv): once the state
# at the start of a layer repeats the one at the start of the layer before, the layers after are copied
# (core::ExecOptions::reuse), with or without defects (the same tiles serve every layer, so a repaired
# link slows them all alike), with each allreduce.
set(SMALL8 --wafer small --model ${DATA}/reuse_small_8_layers.json --context 512)
reuse_test(square_meshgemv some ${TINY6} --placement square --kernel meshgemv)
reuse_test(square_meshgemv_trace some ${TINY6} --placement square --kernel meshgemv --trace TRACE)
reuse_test(square_meshgemv_defects some ${TINY6} --placement square --kernel meshgemv --density 20 --seed 5)
reuse_test(whole_wafer_meshgemv some ${TINY6} --placement whole-wafer --kernel meshgemv --allreduce chain)
reuse_test(small_square_tree some ${SMALL8} --placement square --kernel meshgemv)
reuse_test(small_square_chain_defects some ${SMALL8} --placement square --kernel meshgemv --allreduce chain --density 0.5 --seed 2)
reuse_test(small_whole_wafer_centre some ${SMALL8} --placement whole-wafer --kernel meshgemv --allreduce centre --batch 2)
# The bands kernel on one region: its colors are rerouted within every layer (color_switch), and back, so
# the route tables are the same at every layer's start.
reuse_test(square_bands some ${TINY6} --placement square)
reuse_test(small_square_bands some ${SMALL8} --placement square)
reuse_test(small_whole_wafer_bands_defects some ${SMALL8} --placement whole-wafer --batch 2 --density 0.5 --seed 3)
# A task held for its tile's earlier task (a repair detour reordered its inputs: cli.held_order) ends reuse there.
reuse_test(small_llama_held any --wafer small --model small-llama --context 256 --placement layer-bands --density 2 --seed 1)
# Layers on one region of each wafer of a pipeline (too few per wafer to jump here: the same answer).
reuse_test(small_square_wafers2 any ${SMALL8} --placement square --wafers 2)
# The cycle reference cannot jump (noc::Network::supports_reuse): every task runs, same answer.
reuse_test(square_meshgemv_cycle none ${TINY6} --placement square --kernel meshgemv --fidelity cycle)
# A band per layer (layer-bands): each layer's band is the one before moved down (core::Executor, reuse in
# space). Once the state at a layer's start repeats the one at the layer before, moved a band on, the bands
# after are copied; route tables (color_switch) are described band by band, or absent.
reuse_test(layer_bands some ${TINY6})
reuse_test(small_layer_bands some ${SMALL8})
reuse_test(small_layer_bands_batch2 some ${SMALL8} --batch 2)
reuse_test(small_layer_bands_no_switch some --wafer ${DATA}/reuse_small_no_switch.json
           --model ${DATA}/reuse_small_8_layers.json --context 512)
reuse_test(small_layer_bands_trace some ${SMALL8} --trace TRACE)
reuse_test(small_layer_bands_trace_window some ${SMALL8} --trace TRACE --trace-window 0:15,20:40)
reuse_test(small_layer_bands_cycle none ${SMALL8} --fidelity cycle)
# The shortest run watched (core::Executor::kMinSpaceGroups, six groups: the state repeats from the run's
# third cut, so six groups copy three, about what watching them costs; docs/timing.md): 8 layers leave six
# bands alike and copy three; 7 leave five, which would copy two, and are not watched at all.
reuse_test(small_layer_bands_6_alike some:3 --wafer small --model ${DATA}/reuse_small_8_layers.json --context 512)
reuse_test(small_layer_bands_5_alike unwatched --wafer small --model ${DATA}/reuse_small_7_layers.json --context 512)
# Defects: repaired links of other lengths make bands differ (a band is only copied onto bands alike); the
# answer is the same whatever applies.
reuse_test(layer_bands_defects any ${TINY6} --density 20 --seed 3)
reuse_test(small_layer_bands_defects any ${SMALL8} --density 2 --seed 4)
reuse_test(small_defect_aware_defects any ${SMALL8} --placement defect-aware --density 2 --seed 4)
# One defect splits the bands alike into two runs, watched one after the other: the first copies 3 layers and
# the second 26, more than the longer run could copy alone (26).
reuse_test(small40_layer_bands_two_runs some:27 --wafer small --model ${DATA}/reuse_small_40_layers.json --context 512
           --defects ${DATA}/reuse_small40_defect.csv)
reuse_test(small40_layer_bands_two_runs_trace some:27 --wafer small --model ${DATA}/reuse_small_40_layers.json
           --context 512 --defects ${DATA}/reuse_small40_defect.csv --trace TRACE)
reuse_test(small40_serpentine_defect any --wafer small --model ${DATA}/reuse_small_40_layers.json --context 512
           --placement serpentine-bands --defects ${DATA}/reuse_small40_defect.csv)
# serpentine-bands: layers pair up in band rows flowing east and west in turn, so the bands repeat every
# four layers (two band rows): too few groups with 8 layers, enough with 40.
set(SMALL40 --wafer small --model ${DATA}/reuse_small_40_layers.json --context 512)
reuse_test(small_serpentine any ${SMALL8} --placement serpentine-bands)
reuse_test(small40_serpentine some ${SMALL40} --placement serpentine-bands)
reuse_test(small40_serpentine_trace some ${SMALL40} --placement serpentine-bands --trace TRACE)
reuse_test(small40_serpentine_batch2 some ${SMALL40} --placement serpentine-bands --batch 2)
reuse_test(small40_layer_bands some ${SMALL40})
