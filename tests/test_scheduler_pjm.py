"""Fujitsu PJM (#PJM) as a source scheduler: -L resources one by one or comma-joined in quotes, --mpi
parameters, Fugaku's node shapes, the group as the account, and its job variables read as the
target's. Scripts written for these tests in styles the corpus does not hold (Fugaku's quoted
rscunit/rscgrp line and a 3-D shape, a Wisteria share-group job on GPUs, a placeholder group).
PJM runs nowhere here: the unit is tested against the pjsub options of the Fugaku user guide
(read 2026-11-29), a stand-in for a real pjsub.
"""

from maple_ci import schedulers
from maple_ci.extract import extract_script

PJM = schedulers.get("pjm")


def test_fugakus_quoted_resources_and_shape_read_as_nodes_queue_and_walltime():
    text = ('#!/bin/bash\n#PJM -L "rscunit=rscunit_ft01,rscgrp=small"\n#PJM -L "node=2x3x2"\n'
            '#PJM -L elapse=30:00\n#PJM --mpi "proc=48,max-proc-per-node=4"\n#PJM -g hp123456\n#PJM -S\n'
            "mpiexec -n 48 ./a.out\n")
    d = PJM.read(text)
    assert (d.nodes, d.queue, d.walltime, d.ntasks, d.ntasks_per_node, d.account) == (
        12, "small", "00:30:00", 48, 4, "hp123456")


def test_a_share_group_job_on_gpus_and_a_placeholder_group():
    text = ("#!/bin/sh\n#PJM -L rscgrp=share-short\n#PJM -L gpu=2\n#PJM -L elapse=0:15:00\n"
            "#PJM -g <your group>\n#PJM -j\ntorchrun --nproc_per_node=2 train.py\n")
    intent = extract_script(text)
    assert (intent.scheduler, intent.gpus_per_node, intent.world_size, intent.queue, intent.account) == (
        "pjm", 2, 2, "share-short", None)
    assert any("placeholder" in note for note in intent.notes)


def test_an_unreadable_node_shape_is_refused_with_its_line():
    d = PJM.read("#!/bin/bash\n#PJM -L node=2xfour\nmpiexec ./a.out\n", strict=False)
    assert d.errors and "line 2" in str(d.errors[0]) and "2xfour" in str(d.errors[0])


def test_the_job_variables_read_as_slurms():
    from maple_ci.schedulers.jobvars import translate
    assert translate("$PJM_O_WORKDIR/out", "slurm", 4) == "$SLURM_SUBMIT_DIR/out"
    assert translate("${PJM_MPI_PROC}", "slurm", 4) == "$((NNODES * 4))"  # ranks: the port's own count


def test_the_walltime_is_rewritten_where_pjsub_reads_it():
    text = "#!/bin/bash\n#PJM -L node=1,elapse=1:00:00\n#PJM -g ab12\npython t.py\n"
    changed = PJM.set_option(text, "-L elapse", "02:30:00")
    assert PJM.read(changed).walltime == "02:30:00" and PJM.read(changed).nodes == 1
    assert "-L elapse=02:30:00" in changed


def test_pjm_mpi_proc_is_the_ranks_mpirun_starts():
    text = "#!/bin/bash\n#PJM -L node=4\n#PJM --mpi proc=8\n#PJM -L elapse=1:00:00\nmpirun -np $PJM_MPI_PROC -map-by node python gen.py\n"
    intent = extract_script(text)
    assert (intent.nodes, intent.gpus_per_node, intent.world_size) == (4, 2, 8)
