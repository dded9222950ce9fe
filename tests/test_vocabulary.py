"""Issue 25, E: launcher, strategy and job-variable values beyond PyTorch's data parallelism, each
read by its tool's own documents (sources in maple_ci/extract/ray_cluster.py, kind.py and the
scheduler units). Every script here is written in a style the corpus (tests/data/real) and the
unseen sets do not hold: Ray started per node over mpiexec under PBS or ssh, vLLM's short -tp/-pp
options and its OpenAI server module, DataParallel and torch.distributed.pipelining programs,
shards handed their rank by Flux, a Horovod/Keras program under a project path, NCI's job-wide
counts read by a program. PBS does not run here: its job variables follow NCI's published table."""

import re

import pytest

from maple_ci.errors import MapleError
from maple_ci.port import port_intent
from maple_ci.trace import trace_script
from maple_ci.trace.compare import first_rank
from test_extract_setup import PBS, read

SLURM = "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=4\n#SBATCH -t 01:00:00\n"


# -- a program on a Ray cluster: launcher ray, vLLM's sizes, and a port that refuses ------------

RAY_OVER_MPIEXEC = (PBS + 'head=$(head -n 1 "$PBS_NODEFILE")\n'
                    'mpiexec -n 1 --hosts "$head" ray start --head --port 6380 --num-gpus 4 --block &\n'
                    'for host in $(sort -u "$PBS_NODEFILE" | tail -n +2); do\n'
                    '  mpiexec -n 1 --hosts "$host" ray start --address "$head:6380" --num-gpus 4 --block &\n'
                    'done\nsleep 30\n')


def test_vllm_on_a_ray_cluster_started_per_node_is_a_ray_job_of_tp_times_pp_workers(tmp_path):
    text = RAY_OVER_MPIEXEC + "python -m vllm.entrypoints.openai.api_server --model m -tp 4 -pp 2\n"
    intent = read(text, tmp_path)
    assert (intent.launcher, intent.framework, intent.strategy) == ("ray", "vllm", "tp+pp")
    assert (intent.nodes, intent.gpus_per_node, intent.world_size) == (2, 4, 8)


def test_vllm_told_to_use_ray_without_a_scheduler_takes_pipeline_size_nodes(tmp_path):
    # vLLM's layout: tensor size = GPUs per node, pipeline size = nodes (its "Parallelism and Scaling")
    intent = read("#!/bin/bash\nvllm serve org/model --pipeline-parallel-size=3 --distributed-executor-backend=ray\n", tmp_path)
    assert (intent.launcher, intent.strategy, intent.nodes, intent.gpus_per_node, intent.world_size) == ("ray", "pp", 3, 1, 3)


def test_vllm_on_one_node_without_ray_keeps_its_launcher_and_names_tensor_parallelism(tmp_path):
    intent = read("#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gres=gpu:4\nvllm serve org/model --tensor-parallel-size 4\n", tmp_path)
    assert (intent.launcher, intent.framework, intent.strategy) == ("python", "vllm", "tp")


def test_a_ray_driver_on_a_cluster_started_over_ssh_has_the_gpus_each_node_offers(tmp_path):
    text = (SLURM + 'nodes=($(scontrol show hostnames "$SLURM_JOB_NODELIST"))\n'
            'ssh "${nodes[0]}" ray start --head --num-gpus=4\n'
            'ssh "${nodes[1]}" ray start --address="${nodes[0]}:6379" --num-gpus=4\n'
            'python tune_search.py --trials 32\n')
    intent = read(text, tmp_path, {"tune_search.py": "import ray\nfrom ray import tune\n"})
    assert (intent.launcher, intent.framework, intent.strategy) == ("ray", "ray", None)
    assert (intent.nodes, intent.gpus_per_node, intent.world_size) == (2, 4, 8)  # the cluster's GPUs; trials are the program's
    # Ray detects the node's GPUs when a start names none: the directives' count; none asked, unknown
    detected = read(text.replace(" --num-gpus=4", ""), tmp_path)
    assert (detected.launcher, detected.gpus_per_node, detected.world_size) == ("ray", 4, 8)
    unsized = read(text.replace(" --num-gpus=4", "").replace("#SBATCH --gpus-per-node=4\n", ""), tmp_path)
    assert (unsized.launcher, unsized.gpus_per_node, unsized.world_size) == ("ray", None, None)


@pytest.mark.parametrize("target", ["perlmutter", "polaris"])
def test_a_port_of_a_ray_job_refuses_naming_the_ray_start_and_writes_nothing(target, tmp_path):
    intent = read(RAY_OVER_MPIEXEC + "vllm serve m -tp 4 -pp 2\n", tmp_path)
    with pytest.raises(MapleError, match=r"runs on a Ray cluster \(8 GPU workers on 2 nodes\).*ray start --head"):
        port_intent(intent, [target], "job.sh", tmp_path / "out")
    assert not (tmp_path / "out").exists()


# -- strategies beyond ddp ------------------------------------------------------------------------

ONE_NODE = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gres=gpu:4\n#SBATCH -t 01:00:00\n"


@pytest.mark.parametrize("program, strategy", [
    ("import torch\nnet = torch.nn.DataParallel(Net()).cuda()\n", "dp"),
    ("from torch.nn import DataParallel as DP\nnet = DataParallel (Net())\n", "dp"),
    # DistributedDataParallel in one process is not DataParallel: one process, one device
    ("import torch\nnet = torch.nn.parallel.DistributedDataParallel(Net())\n", "single"),
])
def test_one_process_splitting_batches_over_its_gpus_is_dp(program, strategy, tmp_path):
    intent = read(ONE_NODE + "python fit.py\n", tmp_path, {"fit.py": program})
    assert (intent.strategy, intent.world_size) == (strategy, 1)


def test_a_dp_port_runs_one_process_on_the_node(tmp_path):
    intent = read(ONE_NODE + "python fit.py\n", tmp_path, {"fit.py": "net = torch.nn.DataParallel(net)\n"})
    [result] = port_intent(intent, ["perlmutter"], "job.sh", tmp_path / "out")
    assert result.status == "ok" and re.search(r"^srun[^\n]*--ntasks=1\b|^python3? fit\.py", result.script, re.M), result.script


@pytest.mark.parametrize("launch, program", [
    ("torchrun --nproc_per_node 4 stages.py", "from torch.distributed.pipelining import PipelineStage, ScheduleGPipe\n"),
    ("deepspeed --num_gpus 4 pipe.py --deepspeed_config ds.json", "from deepspeed.pipe import PipelineModule\n"),
])
def test_a_program_built_of_pipeline_stages_is_pp(launch, program, tmp_path):
    files = {launch.split()[3]: program, "ds.json": '{"train_batch_size": 8}'}
    assert read(ONE_NODE + launch + "\n", tmp_path, files).strategy == "pp"


FLUX = "#!/bin/bash\n#flux: -N 2\n#flux: -t 60m\n"


@pytest.mark.parametrize("program, strategy", [
    ("import sys\nshard = int(sys.argv[2])\n", None),  # independent shards: no process group
    ("import torch.distributed as dist\ndist.init_process_group('nccl')\n", "ddp"),
])
def test_ranks_handed_as_arguments_are_shards_unless_the_program_forms_a_group(program, strategy, tmp_path):
    text = FLUX + "flux run -N 2 -n 8 -g 1 python score.py 8 \\$FLUX_TASK_RANK --batch 64\n"
    text = text.replace("\\$", "$")
    assert read(text, tmp_path, {"score.py": program}).strategy == strategy


def test_a_framework_config_with_its_own_parallel_layout_leaves_the_strategy_unknown(tmp_path):
    config = "model = dict(num_layers=24)\nparallel = dict(zero1=dict(size=8), tensor=dict(size=2, mode='1d'))\n"
    text = ONE_NODE + "torchrun --nproc_per_node=4 train.py --config configs/7b.py\n"
    intent = read(text, tmp_path, {"configs/7b.py": config, "train.py": "import torch\n"})
    assert (intent.strategy, intent.world_size) == (None, 4)


# -- Horovod/Keras under a project path; NCI's counts on Slurm -----------------------------------

def test_a_program_at_a_site_path_is_read_from_the_checkout_by_its_tail(tmp_path):
    text = ("#!/bin/bash\n#PBS -l select=2:ncpus=48:ngpus=4:mpiprocs=4\n#PBS -l walltime=00:30:00\n"
            "mpirun -np 8 --map-by ppr:4:node python /g/data/ab12/me/tutorials/keras_hvd/fit.py --epochs 3\n")
    intent = read(text, tmp_path, {"keras_hvd/fit.py": "import horovod.keras as hvd\nimport tensorflow as tf\n"})
    assert (intent.framework, intent.strategy) == ("horovod", None)
    assert intent.entrypoint == "/g/data/ab12/me/tutorials/keras_hvd/fit.py"  # kept as written


def test_ncis_job_cpu_count_reaches_a_slurm_port_as_the_nodes_cpus(tmp_path):
    text = ("#!/bin/bash\n#PBS -P ab12\n#PBS -q gpuvolta\n#PBS -l ncpus=48\n#PBS -l ngpus=4\n#PBS -l walltime=02:00:00\n"
            "python3 fit.py --loader-workers ${PBS_NCPUS}\n")
    intent = read(text, tmp_path, {"fit.py": "net = torch.nn.DataParallel(net)\n"})
    [result] = port_intent(intent, ["perlmutter"], "job.sh", tmp_path / "out")
    assert result.status == "ok"  # bash computes it on the target: double quotes, not a literal string
    assert '--loader-workers "$((SLURM_CPUS_ON_NODE * NNODES))"' in result.script, result.script


def test_ncis_job_gpu_count_has_no_slurm_counterpart_a_port_can_vouch_for(tmp_path):
    # a one-process job's GPUs are not its ranks: the port cannot write them as arithmetic over its ranks
    text = "#!/bin/bash\n#PBS -q gpuvolta\n#PBS -l ncpus=48\n#PBS -l ngpus=4\npython3 fit.py --gpus $PBS_NGPUS\n"
    intent = read(text, tmp_path, {"fit.py": "net = torch.nn.DataParallel(net)\n"})
    with pytest.raises(MapleError, match="PBS_NGPUS"):
        port_intent(intent, ["perlmutter"], "job.sh", tmp_path / "out")


# -- the trace: pbsdsh by node index, deepy.py as DeepSpeed's launcher -----------------------------

def test_pbsdsh_by_index_runs_on_the_node_holding_that_cpu(tmp_path):
    (tmp_path / "node.sh").write_text('#!/bin/bash\npython train.py --node-rank "$1"\n')
    (tmp_path / "node.sh").chmod(0o755)
    (tmp_path / "train.py").write_text("import torch\n")
    text = ("#!/bin/bash\n#PBS -l ncpus=96\n#PBS -l ngpus=8\n#PBS -l walltime=01:00:00\n"
            "rank=0\nfor first in $(seq 0 $PBS_NCI_NCPUS_PER_NODE $((PBS_NCPUS - 1))); do\n"
            "  pbsdsh -v -n $first -- ./node.sh $rank &\n  rank=$((rank + 1))\ndone\nwait\n")
    (tmp_path / "job.pbs").write_text(text)
    trace = trace_script(tmp_path / "job.pbs", cluster="gadi", checkout=tmp_path, trusted=True)
    placed = sorted((r.node, r.program[-1]) for r in trace.ranks)
    assert placed == [("n001", "0"), ("n002", "1")], trace.ranks


def test_deepy_py_runs_its_program_under_deepspeeds_launcher(tmp_path):
    # the trace only: a port keeps deepy.py (train.py alone would miss the configs deepy.py hands it)
    (tmp_path / "train.py").write_text("import deepspeed\n")
    (tmp_path / "job.sh").write_text(ONE_NODE + "python3 ./deepy.py train.py -d configs small.yml setup.yml\n")
    trace = trace_script(tmp_path / "job.sh", checkout=tmp_path, trusted=True)
    ranks = first_rank(trace)
    assert ranks and ranks[-1].program[:5] == ["train.py", "-d", "configs", "small.yml", "setup.yml"]


def test_nested_arithmetic_is_read_to_its_own_closing_parentheses(tmp_path):
    # a translated job-wide count nests $(( )) and ( ): the reader must not stop at the first "))"
    text = ("#!/bin/bash\n#SBATCH -N 2\nNNODES=$SLURM_JOB_NUM_NODES\nA=$(( (2 + 3) * 4 ))\n"
            'srun python t.py --a "$(($((NNODES)) + 1))" --b $A --c "$(((NNODES * 4) / $((SLURM_CPUS_ON_NODE / 4))))"\n')
    assert read(text, tmp_path).script_args == [
        "--a", "$(($(($SLURM_JOB_NUM_NODES)) + 1))", "--b", "20",
        "--c", "$((($SLURM_JOB_NUM_NODES * 4) / $((SLURM_CPUS_ON_NODE / 4))))"]
