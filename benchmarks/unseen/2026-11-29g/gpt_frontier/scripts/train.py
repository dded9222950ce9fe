# imports
import time, os, json, random, math, argparse, sys, hashlib
import shutil
from pathlib import Path
from dotenv import load_dotenv
from contextlib import nullcontext
from tqdm import tqdm
import subprocess
import wandb
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
import torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader, DistributedSampler, random_split

# add parent directory (one level up) to sys.path
sys.path.append(str(Path(__file__).resolve().parent.parent))
from utils.dataset import *
from models.model import *
from models.config import Config
from utils.get_lr import get_lr
from utils.loss import (
    build_loss,
    GlobalPearsonCorrLoss,
    GenomicContrastiveLoss,
    EnvironmentContrastiveLoss,
    compute_ibs_similarity,
    compute_grm_similarity,
    macro_env_pearson,
    envwise_mse,
    envwise_ccc,
)
from utils.utils import *
from utils.utils import EnvStratifiedSampler, str2bool

load_dotenv()
os.environ["WANDB_PROJECT"] = os.getenv("WANDB_PROJECT")
os.environ["WANDB_ENTITY"] = os.getenv("WANDB_ENTITY")
os.environ["WANDB_API_KEY"] = os.getenv("WANDB_API_KEY")

def extract_master_addr():
    try:
        # Use scontrol to get the hostname of the first node
        nodelist = os.environ["SLURM_NODELIST"]
        node = subprocess.check_output(
            ["scontrol", "show", "hostname", nodelist]
        ).decode().splitlines()[0]
        return node
    except Exception as e:
        print(f"[WARN] Failed to extract master address from SLURM_NODELIST: {e}")
        return "localhost"

def setup_ddp():
    rank = int(os.environ["SLURM_PROCID"])
    world_size = int(os.environ["SLURM_NTASKS"])
    local_rank = int(os.environ.get("SLURM_LOCALID", 0))

    local_rank = 0
    torch.cuda.set_device(local_rank)

    # Ensure MASTER_ADDR is set and routable (hostname -i can return IPv6 on Frontier)
    master = os.environ.get("MASTER_ADDR", "")
    if not master or ":" in master:  # missing or IPv6
        master = extract_master_addr()
        os.environ["MASTER_ADDR"] = master
    if rank == 0:
        print(f"[DDP] MASTER_ADDR={os.environ.get('MASTER_ADDR')}, MASTER_PORT={os.environ.get('MASTER_PORT')}, world_size={world_size}")

    dist.init_process_group(
        backend="nccl",
        rank=rank,
        world_size=world_size
    )

    return torch.device(f"cuda:{local_rank}"), local_rank, rank, world_size

def cleanup_ddp():
    """clean up torch distributed backend"""
    dist.destroy_process_group()

def is_main(rank) -> bool:
    """check if current process is main"""
    return rank == 0


def _debug_sync_probe(enabled: bool, rank: int, label: str, tensor: torch.Tensor | None = None):
    if not enabled or not is_main(rank):
        return
    torch.cuda.synchronize()
    msg = f"[DEBUG_PROBE] {label}"
    if tensor is not None and isinstance(tensor, torch.Tensor):
        with torch.no_grad():
            msg += (
                f" shape={tuple(tensor.shape)}"
                f" dtype={tensor.dtype}"
                f" finite={bool(torch.isfinite(tensor).all().item())}"
            )
    print(msg, flush=True)


def _normalize_choice(name: str, value, allowed: set[str], default: str) -> str:
    """
    Backward-compatible normalizer for legacy boolean-like CLI values.
    """
    v = str(value).strip().lower()
    if v in {"", "false", "0", "off", "none", "no"}:
        return default
    if v not in allowed:
        raise ValueError(f"Unsupported {name}='{value}'. Allowed: {sorted(allowed)}")
    return v


def _wandb_safe_group_name(name: str, limit: int = 128) -> str:
    """W&B group names are capped at 128 chars; preserve uniqueness with a hash suffix."""
    name = str(name)
    if len(name) <= limit:
        return name
    digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:8]
    return f"{name[:limit - 9]}-{digest}"

### main ###
def main():
    # setup
    args = parse_args()
    base_run_name = make_run_name(args)
    wandb_run_name = add_runtime_suffix(base_run_name, getattr(args, "seed", None))
    wandb_group_name = _wandb_safe_group_name(base_run_name)

    device, local_rank, rank, world_size = setup_ddp()

    def _get_arg_or_env(attr, env_key, default, cast=None):
        val = getattr(args, attr, None)
        if val is None:
            env_val = os.getenv(env_key)
            if env_val is None or env_val == "":
                return default
            return cast(env_val) if cast is not None else env_val
        return val

    # reproducibility 
    set_seed(args.seed + rank)  # different seed for each rank
    g = torch.Generator()
    g.manual_seed(args.seed + rank)

    # Check if using LEO (Leave-Environment-Out) validation
    leo_val = _get_arg_or_env("leo_val", "LEO_VAL", False, str2bool)
    leo_val_fraction = _get_arg_or_env("leo_val_fraction", "LEO_VAL_FRACTION", 0.15, float)
    val_scheme = _get_arg_or_env("val_scheme", "VAL_SCHEME", None, str)
    if val_scheme is None:
        val_scheme = "leo" if leo_val else "year"
    val_scheme = str(val_scheme).strip().lower()
    if val_scheme == "same_tester_novel_cross":
        val_scheme = "proxy_same_tester"
    proxy_validation_mode = str(
        _get_arg_or_env("proxy_validation_mode", "PROXY_VALIDATION_MODE", "none", str)
    ).strip().lower()
    if proxy_validation_mode in {"", "false", "0", "off", "no"}:
        proxy_validation_mode = "none"
    if proxy_validation_mode not in {"none", "same_tester_novel_cross"}:
        raise ValueError(
            "PROXY_VALIDATION_MODE must be 'none' or 'same_tester_novel_cross' "
            f"(got {proxy_validation_mode!r})"
        )
    g_input_type = str(_get_arg_or_env("g_input_type", "G_INPUT_TYPE", "tokens", str)).lower()
    env_categorical_mode = normalize_env_categorical_mode(
        _get_arg_or_env("env_categorical_mode", "ENV_CATEGORICAL_MODE", "drop", str)
    )
    proxy_tester = str(_get_arg_or_env("proxy_tester", "PROXY_TESTER", "PHP02", str)).strip()
    proxy_holdout_frac = _get_arg_or_env("proxy_holdout_frac", "PROXY_HOLDOUT_FRAC", 0.20, float)
    proxy_seed = _get_arg_or_env("proxy_seed", "PROXY_SEED", args.seed, int)
    proxy_disjoint_from_leo = _get_arg_or_env(
        "proxy_disjoint_from_leo", "PROXY_DISJOINT_FROM_LEO", True, str2bool
    )
    calibration_mode = str(_get_arg_or_env("calibration_mode", "CALIBRATION_MODE", "none", str)).lower()
    calibration_enabled = calibration_mode == "env_affine"
    if calibration_enabled and not args.full_transformer:
        raise ValueError("calibration_mode=env_affine is only supported for FullTransformer.")
    calibration_start_epoch = _get_arg_or_env("calibration_start_epoch", "CALIBRATION_START_EPOCH", 150, int)
    calibration_ramp_epochs = _get_arg_or_env("calibration_ramp_epochs", "CALIBRATION_RAMP_EPOCHS", 100, int)
    calibration_detach_rank_until_epoch = _get_arg_or_env(
        "calibration_detach_rank_until_epoch", "CALIBRATION_DETACH_RANK_UNTIL_EPOCH", 250, int
    )
    calibration_joint_grad_fraction = _get_arg_or_env(
        "calibration_joint_grad_fraction", "CALIBRATION_JOINT_GRAD_FRACTION", 0.10, float
    )
    envccc_weight = _get_arg_or_env("envccc_weight", "ENVCCC_WEIGHT", 0.10, float)
    huber_weight = _get_arg_or_env("huber_weight", "HUBER_WEIGHT", 0.02, float)
    debug_probe = _get_arg_or_env("debug_probe", "DEBUG_PROBE", False, str2bool)
    debug_max_steps = _get_arg_or_env("debug_max_steps", "DEBUG_MAX_STEPS", 0, int)
    debug_skip_backward = _get_arg_or_env("debug_skip_backward", "DEBUG_SKIP_BACKWARD", False, str2bool)
    debug_skip_optimizer = _get_arg_or_env("debug_skip_optimizer", "DEBUG_SKIP_OPTIMIZER", False, str2bool)
    debug_no_autocast = _get_arg_or_env("debug_no_autocast", "DEBUG_NO_AUTOCAST", False, str2bool)
    use_parent_embeddings = _get_arg_or_env("use_parent_embeddings", "USE_PARENT_EMBEDDINGS", False, str2bool)
    use_dual_channel = _get_arg_or_env("use_dual_channel", "USE_DUAL_CHANNEL", False, str2bool)
    contrastive_warmup_epochs = _get_arg_or_env(
        "contrastive_warmup_epochs", "CONTRASTIVE_WARMUP_EPOCHS", 50, int
    )
    contrastive_ramp_epochs = _get_arg_or_env(
        "contrastive_ramp_epochs", "CONTRASTIVE_RAMP_EPOCHS", 50, int
    )
    
    if is_main(rank) and val_scheme == "leo":
        print(f"[INFO] Using LEO (Leave-Environment-Out) validation")
        print(f"[INFO] Holding out {leo_val_fraction*100:.0f}% of environments for validation")
    if is_main(rank) and val_scheme == "proxy_same_tester":
        print(
            f"[INFO] Using proxy_same_tester validation: tester={proxy_tester}, "
            f"holdout_frac={proxy_holdout_frac:.2f}, seed={proxy_seed}"
        )
    if is_main(rank) and proxy_validation_mode == "same_tester_novel_cross":
        print(
            f"[INFO] Logging proxy validation diagnostic beside primary validation: "
            f"tester={proxy_tester}, holdout_frac={proxy_holdout_frac:.2f}, "
            f"seed={proxy_seed}, disjoint_from_leo={proxy_disjoint_from_leo}"
        )
    if is_main(rank):
        print(f"[INFO] Env categorical mode: {env_categorical_mode}")
        print(f"[INFO] Calibration mode: {calibration_mode}")
        if debug_probe:
            print(
                f"[DEBUG_PROBE] enabled=True max_steps={debug_max_steps} "
                f"skip_backward={debug_skip_backward} skip_optimizer={debug_skip_optimizer} "
                f"no_autocast={debug_no_autocast}",
                flush=True,
            )

    # data (samplers are needed for DDP)
    train_ds = GxE_Dataset(
        split="train",
        data_path='data/maize_data_2014-2023_vs_2024_v2/',
        scaler=None,
        y_scalers=None, # train will fit the scalers
        scale_targets=args.scale_targets,
        g_input_type=g_input_type,
        env_categorical_mode=env_categorical_mode,
        marker_stats=None,
        leo_val=leo_val,
        leo_val_fraction=leo_val_fraction,
        leo_seed=args.seed,
        val_scheme=val_scheme,
        proxy_tester=proxy_tester,
        proxy_holdout_frac=proxy_holdout_frac,
        proxy_seed=proxy_seed,
        proxy_disjoint_from_leo=proxy_disjoint_from_leo,
    )
    env_scaler = train_ds.scaler
    y_scalers = train_ds.label_scalers
    marker_stats = train_ds.marker_stats
    leo_val_envs = train_ds.leo_val_envs  # Pass to val_ds for consistency
    proxy_val_parent1s = train_ds.proxy_val_parent1s
    parent_vocab = train_ds.parent_vocab
    
    if is_main(rank) and val_scheme == "leo":
        print(f"[INFO] Train samples: {len(train_ds):,}, Train envs: {train_ds.env_id_tensor.unique().numel()}")
        print(f"[INFO] LEO val envs: {len(leo_val_envs) if leo_val_envs else 0}")
    if is_main(rank) and val_scheme == "proxy_same_tester":
        print(f"[INFO] Proxy diagnostics: {json.dumps(train_ds.proxy_info, sort_keys=True)}")
    
    val_ds = GxE_Dataset(
        split="val",
        data_path="data/maize_data_2014-2023_vs_2024_v2/",
        scaler=env_scaler,
        y_scalers=y_scalers,
        scale_targets=args.scale_targets,
        g_input_type=g_input_type,
        env_categorical_mode=env_categorical_mode,
        marker_stats=marker_stats,
        leo_val=leo_val,
        leo_val_envs=leo_val_envs,  # Use same held-out envs computed by train
        val_scheme=val_scheme,
        proxy_tester=proxy_tester,
        proxy_holdout_frac=proxy_holdout_frac,
        proxy_seed=proxy_seed,
        proxy_val_parent1s=proxy_val_parent1s,
        proxy_disjoint_from_leo=proxy_disjoint_from_leo,
        parent_vocab=parent_vocab,
    )
    
    if is_main(rank) and val_scheme == "leo":
        print(f"[INFO] Val samples: {len(val_ds):,}, Val envs: {val_ds.env_id_tensor.unique().numel()}")
    if is_main(rank) and val_scheme == "proxy_same_tester":
        print(f"[INFO] Val samples: {len(val_ds):,}, Val envs: {val_ds.env_id_tensor.unique().numel()}")

    train_sampler = DistributedSampler(train_ds, shuffle=True)
    val_sampler = DistributedSampler(val_ds, shuffle=False)
    
    # Check if using env-stratified sampling (recommended for envpcc loss)
    env_stratified = _get_arg_or_env("env_stratified", "ENV_STRATIFIED", False, str2bool)
    min_samples_per_env = _get_arg_or_env("min_samples_per_env", "MIN_SAMPLES_PER_ENV", 32, int)
    use_batch_sampler = False
    
    if env_stratified and "envpcc" in args.loss.lower():
        if is_main(rank):
            print(f"[INFO] Using environment-stratified sampling for envpcc loss")
            print(f"[INFO] min_samples_per_env = {min_samples_per_env}")
        train_sampler = EnvStratifiedSampler(
            env_ids=train_ds.env_id_tensor.tolist(),
            batch_size=args.batch_size,
            shuffle=True,
            seed=args.seed,
            rank=rank,
            world_size=world_size,
            min_samples_per_env=min_samples_per_env,
        )
        use_batch_sampler = True
        
        # Debug: show sampler stats (without iterating through all batches)
        if is_main(rank):
            print(f"[DEBUG] Sampler: {len(train_sampler)} batches for this rank, ~{train_sampler.total_chunks} total chunks")
    
    if use_batch_sampler:
        train_loader = DataLoader(
            train_ds,
            batch_sampler=train_sampler,
            pin_memory=True,
            num_workers=0,  # Disabled: causes slowdown on Lustre
            worker_init_fn=seed_worker,
        )
    else:
        train_loader = DataLoader(
            train_ds,
            batch_size=args.batch_size,
            sampler=train_sampler,
            pin_memory=True,
            num_workers=0,
            worker_init_fn=seed_worker,
        )
    val_loader = DataLoader(
        val_ds, 
        batch_size=args.batch_size, 
        sampler=val_sampler,
        pin_memory=True,
        num_workers=0,
        worker_init_fn=seed_worker,
    )

    proxy_val_ds = None
    proxy_val_loader = None
    if proxy_validation_mode == "same_tester_novel_cross" and val_scheme != "proxy_same_tester":
        proxy_val_ds = GxE_Dataset(
            split="val",
            data_path="data/maize_data_2014-2023_vs_2024_v2/",
            scaler=env_scaler,
            y_scalers=y_scalers,
            scale_targets=args.scale_targets,
            g_input_type=g_input_type,
            env_categorical_mode=env_categorical_mode,
            marker_stats=marker_stats,
            val_scheme="proxy_same_tester",
            proxy_tester=proxy_tester,
            proxy_holdout_frac=proxy_holdout_frac,
            proxy_seed=proxy_seed,
            proxy_disjoint_from_leo=proxy_disjoint_from_leo,
            leo_val_envs=leo_val_envs if proxy_disjoint_from_leo else None,
            parent_vocab=parent_vocab,
        )
        proxy_val_sampler = DistributedSampler(proxy_val_ds, shuffle=False)
        proxy_val_loader = DataLoader(
            proxy_val_ds,
            batch_size=args.batch_size,
            sampler=proxy_val_sampler,
            pin_memory=True,
            num_workers=0,
            worker_init_fn=seed_worker,
        )
        if is_main(rank):
            print(f"[INFO] Proxy diagnostic samples: {len(proxy_val_ds):,}, envs: {proxy_val_ds.env_id_tensor.unique().numel()}")
            print(f"[INFO] Proxy diagnostic split: {json.dumps(proxy_val_ds.proxy_info, sort_keys=True)}")

    # set up config
    config = Config(block_size=train_ds.block_size,
                    g_input_type=g_input_type,
                    n_head=args.heads,
                    n_g_layer=args.g_layers,
                    n_ld_layer=args.ld_layers,
                    n_mlp_layer=args.mlp_layers,
                    n_gxe_layer=args.gxe_layers,
                    n_embd=args.emb_size,
                    dropout=args.dropout,
                    n_env_fts=train_ds.n_env_fts,
                    calibration_mode=calibration_mode,
                    use_parent_embeddings=use_parent_embeddings,
                    use_dual_channel=use_dual_channel,
                    n_parents=train_ds.n_parents)
    config.debug_probe = debug_probe
    g_encoder_type = _get_arg_or_env("g_encoder_type", "G_ENCODER_TYPE", "dense", str)
    moe_num_experts = _get_arg_or_env("moe_num_experts", "MOE_NUM_EXPERTS", 4, int)
    moe_top_k = _get_arg_or_env("moe_top_k", "MOE_TOP_K", 2, int)
    moe_expert_hidden_dim = _get_arg_or_env("moe_expert_hidden_dim", "MOE_EXPERT_HIDDEN_DIM", None, int)
    moe_shared_expert = _get_arg_or_env("moe_shared_expert", "MOE_SHARED_EXPERT", False, str2bool)
    moe_shared_expert_hidden_dim = _get_arg_or_env("moe_shared_expert_hidden_dim", "MOE_SHARED_EXPERT_HIDDEN_DIM", None, int)
    moe_loss_weight = _get_arg_or_env("moe_loss_weight", "MOE_LOSS_WEIGHT", 0.01, float)
    full_tf_mlp_type = _get_arg_or_env("full_tf_mlp_type", "FULL_TF_MLP_TYPE", None, str)
    if full_tf_mlp_type is None:
        full_tf_mlp_type = g_encoder_type
    if isinstance(full_tf_mlp_type, str):
        full_tf_mlp_type = full_tf_mlp_type.lower()
    else:
        full_tf_mlp_type = "moe" if full_tf_mlp_type else "dense"
    moe_encoder_enabled = (
        (args.full_transformer and full_tf_mlp_type == "moe")
        or (bool(args.g_enc) and str(g_encoder_type).lower() == "moe")
    )

    if args.full_transformer:
        model = FullTransformer(
            config,
            mlp_type=full_tf_mlp_type,
            moe_num_experts=moe_num_experts,
            moe_top_k=moe_top_k,
            moe_expert_hidden_dim=moe_expert_hidden_dim,
            moe_shared_expert=moe_shared_expert,
            moe_shared_expert_hidden_dim=moe_shared_expert_hidden_dim,
            moe_loss_weight=moe_loss_weight,
        ).to(device)
    else:
        model = GxE_Transformer(g_enc=args.g_enc,
                                e_enc=args.e_enc,
                                ld_enc=args.ld_enc,
                                gxe_enc=args.gxe_enc,
                                moe=args.wg,
                                g_encoder_type=g_encoder_type,
                                moe_num_experts=moe_num_experts,
                                moe_top_k=moe_top_k,
                                moe_expert_hidden_dim=moe_expert_hidden_dim,
                                moe_shared_expert=moe_shared_expert,
                                moe_shared_expert_hidden_dim=moe_shared_expert_hidden_dim,
                                moe_loss_weight=moe_loss_weight,
                                config=config).to(device)
    if is_main(rank):
        model.print_trainable_parameters()
        print(f"[CONFIG] n_embd={config.n_embd}, n_gxe_layer={config.n_gxe_layer}, "
              f"n_head={config.n_head}, dropout={config.dropout}, "
              f"full_transformer={args.full_transformer}, calibration_mode={calibration_mode}, "
              f"parent_tokens={use_parent_embeddings}, dual_channel={use_dual_channel}")
    model = DDP(model,
                device_ids=[local_rank],
                output_device=local_rank,
                find_unused_parameters=True)

    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    
    # build loss
    loss_function = build_loss(args.loss, args.loss_weights)
    
    # contrastive objectives (ablation mode: none, g, e, g+e)
    contrastive_mode = _normalize_choice(
        "contrastive_mode",
        getattr(args, "contrastive_mode", "none"),
        {"none", "g", "e", "g+e"},
        "none",
    )
    use_g_contrastive = contrastive_mode in {"g", "g+e"}
    use_e_contrastive = contrastive_mode in {"e", "g+e"}

    contrastive_weight = float(getattr(args, "contrastive_weight", 0.1))
    contrastive_temperature = float(getattr(args, "contrastive_temperature", 0.1))
    contrastive_sim_type = _normalize_choice(
        "contrastive_sim_type",
        getattr(args, "contrastive_sim_type", "grm"),
        {"grm", "ibs"},
        "grm",
    )
    contrastive_loss_type = _normalize_choice(
        "contrastive_loss_type",
        getattr(args, "contrastive_loss_type", "mse"),
        {"mse", "cosine", "kl"},
        "mse",
    )

    env_contrastive_weight = float(getattr(args, "env_contrastive_weight", 0.1))
    env_contrastive_temperature = float(getattr(args, "env_contrastive_temperature", 0.5))

    g_contrastive_loss_fn = None
    if use_g_contrastive:
        g_contrastive_loss_fn = GenomicContrastiveLoss(
            temperature=contrastive_temperature,
            similarity_type=contrastive_sim_type,
            loss_type=contrastive_loss_type,
        )

    e_contrastive_loss_fn = None
    if use_e_contrastive:
        e_contrastive_loss_fn = EnvironmentContrastiveLoss(
            temperature=env_contrastive_temperature
        )

    if is_main(rank):
        print(f"[INFO] Contrastive mode: {contrastive_mode}")
        if use_g_contrastive:
            print(
                f"       G contrastive: weight={contrastive_weight}, "
                f"temperature={contrastive_temperature}, "
                f"similarity_type={contrastive_sim_type}, loss_type={contrastive_loss_type}"
            )
        if use_e_contrastive:
            print(
                f"       E contrastive: weight={env_contrastive_weight}, "
                f"temperature={env_contrastive_temperature}"
            )

    # other options
    batches_per_epoch = len(train_loader)
    # Use effective training horizon (early_stop), not max_epochs, for LR schedule
    # Otherwise cosine decay never activates before early stopping kicks in
    effective_epochs = min(args.early_stop * 2, args.num_epochs)  # ~2x early_stop as budget
    total_iters = effective_epochs * batches_per_epoch
    warmup_iters = batches_per_epoch * 5  # warmup for ~5 epochs (large batch needs longer warmup)
    lr_decay_iters = total_iters  # cosine spans entire effective window
    max_lr, min_lr = (args.lr), (0.1 * args.lr)  # 10x decay ratio
    max_epochs = args.num_epochs
    eval_interval = batches_per_epoch
    early_stop = args.early_stop

    if is_main(rank):
        print(f"[INFO] batches_per_epoch = {batches_per_epoch}, batch_size = {args.batch_size}")
        print(f"Training on {batches_per_epoch * args.batch_size * int(os.getenv('SLURM_NNODES'))* 8} samples for {args.num_epochs} epochs.")

    ### wandb logging ###
    if is_main(rank):
        run = wandb.init(
            project=os.getenv("WANDB_PROJECT"),
            entity=os.getenv("WANDB_ENTITY"),
            name=wandb_run_name,
            group=wandb_group_name,
        )
        run.config.update({
            "base_model_type": base_run_name,
            "wandb_group": wandb_group_name,
            "run_name": wandb_run_name,
        }, allow_val_change=True)
        run.summary["model_type"] = base_run_name
        run.summary["run_name"] = wandb_run_name

        # make checkpoint dir that matches run name
        run_ckpt_dir = Path("checkpoints") / wandb_run_name
        if run_ckpt_dir.exists():
            shutil.rmtree(run_ckpt_dir)
        run_ckpt_dir.mkdir(parents=True, exist_ok=True)
        run.summary["checkpoint_dir"] = str(run_ckpt_dir.resolve())

        # write run id to logs
        run_id_file = os.environ.get("WANDB_RUN_ID_FILE")
        if run_id_file:
            with open(run_id_file, "w") as f:
                f.write(run.id.strip())
            print(f"[INFO] WandB run id written to {run_id_file}: {run.id}")

        cdir_file = os.environ.get("CHECKPOINT_DIR_FILE")
        if cdir_file:
            with open(cdir_file, "w") as f:
                f.write(str(run_ckpt_dir.resolve()))
            print(f"[INFO] Checkpoint dir written to {cdir_file}: {run_ckpt_dir.resolve()}")

        run.define_metric("iter_num")
        run.define_metric("train_loss", step_metric="iter_num")
        run.define_metric("learning_rate", step_metric="iter_num")

        # use epochs as steps for epoch-level metrics
        run.define_metric("epoch")
        run.define_metric("train_loss_epoch", step_metric="epoch")
        run.define_metric("val_loss", step_metric="epoch")
        run.define_metric("train_loss_epoch/env_avg_pearson", step_metric="epoch")
        run.define_metric("val_loss/env_avg_pearson", step_metric="epoch")

        # loss tracking
        wandb.config.update({"loss": args.loss,
                             "loss_weights": args.loss_weights,
                             "selection_metric": "val_loss/env_avg_pearson",
                             "n_embd": args.emb_size,
                             "gxe_layers": args.gxe_layers,
                             "g_layers": args.g_layers,
                             "ld_layers": args.ld_layers,
                             "mlp_layers": args.mlp_layers,
                             "heads": args.heads,
                             "dropout": args.dropout,
                             "lr": args.lr,
                             "weight_decay": args.weight_decay,
                             "batch_size": args.batch_size,
                             "gbs": args.gbs,
                             "early_stop": args.early_stop,
                             "contrastive_mode": contrastive_mode,
                             "g_contrastive_enabled": use_g_contrastive,
                             "g_contrastive_weight": contrastive_weight if use_g_contrastive else None,
                             "g_contrastive_temperature": contrastive_temperature if use_g_contrastive else None,
                             "g_contrastive_sim_type": contrastive_sim_type if use_g_contrastive else None,
                             "g_contrastive_loss_type": contrastive_loss_type if use_g_contrastive else None,
                             "e_contrastive_enabled": use_e_contrastive,
                             "e_contrastive_weight": env_contrastive_weight if use_e_contrastive else None,
                             "e_contrastive_temperature": env_contrastive_temperature if use_e_contrastive else None,
                             "g_encoder_type": g_encoder_type,
                             "moe_num_experts": moe_num_experts,
                             "moe_top_k": moe_top_k,
                             "moe_expert_hidden_dim": moe_expert_hidden_dim,
                             "moe_shared_expert": moe_shared_expert,
                             "moe_shared_expert_hidden_dim": moe_shared_expert_hidden_dim,
                             "moe_loss_weight": moe_loss_weight,
                             "g_input_type": g_input_type,
                             "env_categorical_mode": env_categorical_mode,
                             "env_cat_embeddings": (env_categorical_mode == "onehot"),
                             "full_transformer": args.full_transformer,
                             "full_tf_mlp_type": full_tf_mlp_type,
                             "val_scheme": val_scheme,
                             "proxy_tester": proxy_tester if val_scheme == "proxy_same_tester" else None,
                             "proxy_holdout_frac": proxy_holdout_frac if val_scheme == "proxy_same_tester" else None,
                             "proxy_info": train_ds.proxy_info if val_scheme == "proxy_same_tester" else None,
                             "proxy_validation_mode": proxy_validation_mode,
                             "proxy_disjoint_from_leo": proxy_disjoint_from_leo,
                             "proxy_diagnostic_info": (
                                 proxy_val_ds.proxy_info
                                 if proxy_val_ds is not None and proxy_val_ds.proxy_info is not None
                                 else None
                             ),
                             "calibration_mode": calibration_mode,
                             "calibration_start_epoch": calibration_start_epoch,
                             "calibration_ramp_epochs": calibration_ramp_epochs,
                             "calibration_detach_rank_until_epoch": calibration_detach_rank_until_epoch,
                             "calibration_joint_grad_fraction": calibration_joint_grad_fraction,
                             "envccc_weight": envccc_weight,
                             "huber_weight": huber_weight,
                             "contrastive_warmup_epochs": contrastive_warmup_epochs,
                             "contrastive_ramp_epochs": contrastive_ramp_epochs,
                             "use_parent_embeddings": use_parent_embeddings,
                             "use_dual_channel": use_dual_channel,
                             "n_parents": train_ds.n_parents},
                             allow_val_change=True)
        for name in loss_function.names:
            run.define_metric(f"train_loss/{name}", step_metric="iter_num")
            run.define_metric(f"train_loss_epoch/{name}", step_metric="epoch")
            run.define_metric(f"val_loss/{name}", step_metric="epoch")
        if use_g_contrastive:
            run.define_metric("train_loss/contrastive_g", step_metric="iter_num")
            run.define_metric("train_loss_epoch/contrastive_g", step_metric="epoch")
            run.define_metric("train_loss/contrastive_weight_eff_g", step_metric="iter_num")
        if use_e_contrastive:
            run.define_metric("train_loss/contrastive_e", step_metric="iter_num")
            run.define_metric("train_loss_epoch/contrastive_e", step_metric="epoch")
            run.define_metric("train_loss/contrastive_weight_eff_e", step_metric="iter_num")
        if use_g_contrastive or use_e_contrastive:
            run.define_metric("train_loss/contrastive", step_metric="iter_num")
            run.define_metric("train_loss_epoch/contrastive", step_metric="epoch")
        if moe_encoder_enabled:
            run.define_metric("train_loss/moe_lb", step_metric="iter_num")
            run.define_metric("train_loss_epoch/moe_lb", step_metric="epoch")
            run.define_metric("val_loss/moe_lb", step_metric="epoch")
        if calibration_enabled:
            run.define_metric("train_loss/cal_envccc", step_metric="iter_num")
            run.define_metric("train_loss/cal_huber", step_metric="iter_num")
            run.define_metric("val_loss/total_env_avg_pearson", step_metric="epoch")
            run.define_metric("val_loss/total_env_mse", step_metric="epoch")
        if proxy_val_loader is not None:
            run.define_metric("val_proxy/loss", step_metric="epoch")
            run.define_metric("val_proxy/env_avg_pearson", step_metric="epoch")
            run.define_metric("val_proxy/total_env_avg_pearson", step_metric="epoch")
            run.define_metric("val_proxy/total_env_mse", step_metric="epoch")

    # initialize training states
    best_val_loss = float("inf")
    best_val_env_pcc = -float("inf")
    best_val_total_env_mse = float("inf")
    last_improved = 0
    iter_num = 0
    t0 = time.time()
    if is_main(rank):
        print("[INFO] Checkpoint/early-stop selection metric: val_loss/env_avg_pearson (maximize)")

    def _calibration_schedule(epoch: int) -> tuple[float, bool, float]:
        if not calibration_enabled or epoch < calibration_start_epoch:
            return 0.0, True, 0.0
        ramp = max(1, int(calibration_ramp_epochs))
        weight = min(1.0, float(epoch - calibration_start_epoch + 1) / float(ramp))
        detach_rank = epoch < calibration_detach_rank_until_epoch
        rank_grad_scale = 0.0 if detach_rank else float(calibration_joint_grad_fraction)
        return weight, detach_rank, rank_grad_scale

    def _prediction_tensors(preds):
        if isinstance(preds, dict):
            total_pred = preds.get("total")
            rank_pred = preds.get("rank", total_pred)
            return total_pred, rank_pred
        return preds, preds

    ### training loop ###
    for epoch_num in range(max_epochs):
        train_sampler.set_epoch(epoch_num)
        model.train()
        
        # Timing diagnostics for first epoch
        if epoch_num == 0 and is_main(rank):
            t_epoch_start = time.time()

        pbar = tqdm(total=eval_interval,
                    desc=f"Rank {rank} Train",
                    disable=not is_main(rank))
        
        # training steps
        step_times = []
        for step_idx, (xb, yb) in enumerate(train_loader):
            if epoch_num == 0 and is_main(rank):
                t_step_start = time.time()

            if debug_probe and step_idx == 0 and is_main(rank):
                g_cpu = xb.get("g_data")
                e_cpu = xb.get("e_data")
                if isinstance(g_cpu, torch.Tensor):
                    msg = (
                        f"[DEBUG_PROBE] cpu_batch/g_data shape={tuple(g_cpu.shape)} "
                        f"dtype={g_cpu.dtype}"
                    )
                    if g_cpu.numel():
                        msg += f" min={float(g_cpu.min().item()):.6g} max={float(g_cpu.max().item()):.6g}"
                    print(msg, flush=True)
                    if args.full_transformer and getattr(model.module, "g_input_type", "tokens") == "tokens":
                        vocab_size = int(getattr(model.module.config, "vocab_size", 3))
                        bad = ((g_cpu < 0) | (g_cpu >= vocab_size)).sum().item()
                        print(f"[DEBUG_PROBE] cpu_batch/g_vocab_size={vocab_size} bad_token_count={int(bad)}", flush=True)
                if isinstance(e_cpu, torch.Tensor):
                    msg = (
                        f"[DEBUG_PROBE] cpu_batch/e_data shape={tuple(e_cpu.shape)} "
                        f"dtype={e_cpu.dtype}"
                    )
                    if e_cpu.numel():
                        msg += f" finite={bool(torch.isfinite(e_cpu).all().item())}"
                    print(msg, flush=True)
            
            for k, v in xb.items():
                xb[k] = v.to(device, non_blocking=True)
            y_true = yb["y"].to(device, non_blocking=True).float()
            env_id = yb["env_id"].to(device, non_blocking=True).long()
            if debug_probe and step_idx == 0:
                _debug_sync_probe(debug_probe, rank, "batch_on_device/y_true", y_true)
                _debug_sync_probe(debug_probe, rank, "batch_on_device/env_id", env_id.float())

            # fwd/bwd pass
            autocast_ctx = nullcontext() if debug_no_autocast else torch.autocast(device_type='cuda', dtype=torch.bfloat16)
            _debug_sync_probe(debug_probe and step_idx == 0, rank, "before_forward")
            with autocast_ctx:
                cal_weight, detach_rank, rank_grad_scale = _calibration_schedule(epoch_num)
                forward_kwargs = {}
                if calibration_enabled:
                    forward_kwargs = {
                        "detach_rank_in_calibration": detach_rank,
                        "calibration_rank_grad_scale": rank_grad_scale,
                    }
                if use_g_contrastive and use_e_contrastive:
                    preds, g_embeddings, e_embeddings = model(
                        xb,
                        return_g_embeddings=True,
                        return_e_embeddings=True,
                        **forward_kwargs,
                    )
                elif use_g_contrastive:
                    preds, g_embeddings = model(xb, return_g_embeddings=True, **forward_kwargs)
                    e_embeddings = None
                elif use_e_contrastive:
                    preds, e_embeddings = model(xb, return_e_embeddings=True, **forward_kwargs)
                    g_embeddings = None
                else:
                    preds = model(xb, **forward_kwargs)
                    g_embeddings = None
                    e_embeddings = None

                total_pred, rank_pred = _prediction_tensors(preds)
                _debug_sync_probe(debug_probe and step_idx == 0, rank, "after_forward")
                if debug_probe and step_idx == 0:
                    _debug_sync_probe(True, rank, "rank_pred", rank_pred)
                    _debug_sync_probe(True, rank, "total_pred", total_pred)
                loss_total, loss_parts = loss_function(rank_pred, y_true, env_id=env_id)
                if calibration_enabled and cal_weight > 0.0:
                    if envccc_weight:
                        cal_envccc = envwise_ccc(total_pred, y_true, env_id=env_id)
                        loss_total = loss_total + cal_weight * float(envccc_weight) * cal_envccc
                        loss_parts["cal_envccc"] = float(cal_envccc.detach().item())
                        loss_parts["cal_envccc_weight_eff"] = cal_weight * float(envccc_weight)
                    if huber_weight:
                        cal_huber = F.smooth_l1_loss(total_pred, y_true)
                        loss_total = loss_total + cal_weight * float(huber_weight) * cal_huber
                        loss_parts["cal_huber"] = float(cal_huber.detach().item())
                        loss_parts["cal_huber_weight_eff"] = cal_weight * float(huber_weight)
                
                # Add contrastive loss if enabled (with warmup).
                if use_g_contrastive or use_e_contrastive:
                    if epoch_num >= contrastive_warmup_epochs:
                        # Ramp up contrastive weights linearly after warmup
                        warmup_factor = min(
                            1.0,
                            (epoch_num - contrastive_warmup_epochs) / max(1, contrastive_ramp_epochs),
                        )
                        contrastive_total = 0.0

                        if use_g_contrastive and g_embeddings is not None and g_contrastive_loss_fn is not None:
                            g_contr = g_contrastive_loss_fn(g_embeddings, g_data=xb["g_data"])
                            g_weight_eff = contrastive_weight * warmup_factor
                            loss_total = loss_total + g_weight_eff * g_contr
                            loss_parts["contrastive_g"] = float(g_contr.detach().item())
                            loss_parts["contrastive_weight_eff_g"] = g_weight_eff
                            contrastive_total += float(g_contr.detach().item())
                        elif use_g_contrastive:
                            loss_parts["contrastive_g"] = 0.0
                            loss_parts["contrastive_weight_eff_g"] = 0.0

                        if use_e_contrastive and e_embeddings is not None and e_contrastive_loss_fn is not None:
                            e_contr = e_contrastive_loss_fn(
                                e_embeddings,
                                e_data=xb["e_data"],
                            )
                            e_weight_eff = env_contrastive_weight * warmup_factor
                            loss_total = loss_total + e_weight_eff * e_contr
                            loss_parts["contrastive_e"] = float(e_contr.detach().item())
                            loss_parts["contrastive_weight_eff_e"] = e_weight_eff
                            contrastive_total += float(e_contr.detach().item())
                        elif use_e_contrastive:
                            loss_parts["contrastive_e"] = 0.0
                            loss_parts["contrastive_weight_eff_e"] = 0.0

                        loss_parts["contrastive"] = contrastive_total
                    else:
                        if use_g_contrastive:
                            loss_parts["contrastive_g"] = 0.0
                            loss_parts["contrastive_weight_eff_g"] = 0.0
                        if use_e_contrastive:
                            loss_parts["contrastive_e"] = 0.0
                            loss_parts["contrastive_weight_eff_e"] = 0.0
                        loss_parts["contrastive"] = 0.0
                
                moe_aux_loss = getattr(model.module, "moe_aux_loss", None)
                if moe_aux_loss is not None:
                    # Don't detach - gradients need to flow to gate network for load balancing
                    # DDP handles this with find_unused_parameters=True
                    loss_total = loss_total + moe_aux_loss
                    loss_parts["moe_lb"] = float(moe_aux_loss.detach().item())
            _debug_sync_probe(debug_probe and step_idx == 0, rank, "after_loss", loss_total)
            if torch.isnan(loss_total):
                raise RuntimeError("Loss is NaN, stopping training.")

            # apply learning rate schedule              
            lr = get_lr(iter_num,
                        warmup_iters,
                        lr_decay_iters,
                        max_lr,
                        min_lr)
            for pg in optimizer.param_groups:
                pg['lr'] = lr

            # clip gradients on bwd to avoid unstable training 
            if debug_skip_backward:
                if debug_probe and step_idx == 0 and is_main(rank):
                    print("[DEBUG_PROBE] skipping backward()", flush=True)
            else:
                loss_total.backward()
                _debug_sync_probe(debug_probe and step_idx == 0, rank, "after_backward")
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            if debug_skip_backward or debug_skip_optimizer:
                if debug_probe and step_idx == 0 and is_main(rank):
                    print("[DEBUG_PROBE] skipping optimizer.step()", flush=True)
            else:
                optimizer.step()
                _debug_sync_probe(debug_probe and step_idx == 0, rank, "after_optimizer")
            optimizer.zero_grad(set_to_none=True)

            # log wandb
            if is_main(rank):
                log_payload = {
                    "train_loss": loss_total.item(),
                    "learning_rate": lr,
                    "iter_num": iter_num,
                }
                for k, v in loss_parts.items():
                    log_payload[f"train_loss/{k}"] = float(v)
                wandb.log(log_payload)
            
            # Timing diagnostics
            if epoch_num == 0 and is_main(rank):
                step_times.append(time.time() - t_step_start)
                if step_idx < 5 or step_idx % 20 == 0:
                    print(f"[TIMING] Step {step_idx}: {step_times[-1]:.3f}s (avg: {sum(step_times)/len(step_times):.3f}s)")
            
            iter_num += 1
            pbar.update(1)
            if debug_max_steps and (step_idx + 1) >= int(debug_max_steps):
                if is_main(rank):
                    print(f"[DEBUG_PROBE] stopping epoch after {debug_max_steps} step(s)", flush=True)
                break
        pbar.close()
        
        # End of epoch timing
        if epoch_num == 0 and is_main(rank):
            t_epoch_end = time.time()
            print(f"[TIMING] Epoch 0: {t_epoch_end - t_epoch_start:.1f}s total, {len(step_times)} steps, {sum(step_times)/len(step_times):.3f}s/step avg")

        ### evaluation ###
        with torch.no_grad():
            model.eval()

            def _gather_predictions(loader, dataset_len, max_batches=None):
                """Gather ALL predictions/targets across batches and DDP ranks,
                then compute metrics on the full dataset.  This aligns the
                validation metric with how eval.py computes test metrics."""
                all_rank_preds = []
                all_total_preds = []
                all_targets = []
                all_env_ids = []

                for i, (xb, yb) in enumerate(loader):
                    if (max_batches is not None) and (i >= max_batches):
                        break
                    xb = {k: v.to(device, non_blocking=True) for k, v in xb.items()}
                    y_true = yb["y"].to(device, non_blocking=True).float()
                    env_id = yb["env_id"].to(device, non_blocking=True).long()

                    preds = model(xb)
                    total_pred, rank_pred = _prediction_tensors(preds)
                    all_rank_preds.append(rank_pred.squeeze(-1))
                    all_total_preds.append(total_pred.squeeze(-1))
                    all_targets.append(y_true.squeeze(-1))
                    all_env_ids.append(env_id)

                local_rank_preds = torch.cat(all_rank_preds) if all_rank_preds else torch.empty(0, device=device)
                local_total_preds = torch.cat(all_total_preds) if all_total_preds else torch.empty(0, device=device)
                local_targets = torch.cat(all_targets) if all_targets else torch.empty(0, device=device)
                local_env_ids = torch.cat(all_env_ids) if all_env_ids else torch.empty(0, dtype=torch.long, device=device)

                # All-gather across DDP ranks
                def _all_gather_flat(t):
                    local_n = torch.tensor([t.shape[0]], device=device)
                    all_n = [torch.zeros_like(local_n) for _ in range(world_size)]
                    dist.all_gather(all_n, local_n)
                    max_n = max(x.item() for x in all_n)
                    padded = torch.zeros(max_n, device=device, dtype=t.dtype)
                    padded[:t.shape[0]] = t
                    gathered = [torch.zeros_like(padded) for _ in range(world_size)]
                    dist.all_gather(gathered, padded)
                    parts = [gathered[i][:all_n[i].item()] for i in range(world_size)]
                    return torch.cat(parts)

                full_rank_preds = _all_gather_flat(local_rank_preds)[:dataset_len]
                full_total_preds = _all_gather_flat(local_total_preds)[:dataset_len]
                full_targets = _all_gather_flat(local_targets)[:dataset_len]
                full_env_ids = _all_gather_flat(local_env_ids.float()).long()[:dataset_len]
                return full_total_preds, full_rank_preds, full_targets, full_env_ids

            def eval_loader(loader, dataset_len, max_batches=None):
                """Compute validation metrics using gather-then-compute approach."""
                full_total_preds, full_rank_preds, full_targets, full_env_ids = \
                    _gather_predictions(loader, dataset_len, max_batches)

                ltot, lparts = loss_function(full_rank_preds, full_targets, env_id=full_env_ids)
                rank_env_pcc = macro_env_pearson(
                    full_rank_preds, full_targets, full_env_ids, min_samples=2
                )
                total_env_pcc = macro_env_pearson(
                    full_total_preds, full_targets, full_env_ids, min_samples=2
                )
                total_env_mse = envwise_mse(
                    full_total_preds, full_targets, full_env_ids, min_samples=2
                )
                mean_parts = {k: float(v) for k, v in lparts.items()}
                return (
                    ltot,
                    mean_parts,
                    float(rank_env_pcc.item()),
                    float(total_env_pcc.item()),
                    float(total_env_mse.item()),
                )
            
            # reshuffle train sampler s.t. sampled subset is different each epoch
            if isinstance(train_sampler, DistributedSampler):
                train_sampler.set_epoch(10_000 + epoch_num)
            # eval on subset of train for speed, full val
            train_total, train_parts, train_env_pcc, train_total_env_pcc, train_total_env_mse = eval_loader(
                train_loader,
                len(train_ds),
                max_batches=int(math.ceil(len(val_loader) / world_size)),
            )
            val_total, val_parts, val_env_pcc, val_total_env_pcc, val_total_env_mse = eval_loader(
                val_loader,
                len(val_ds),
                max_batches=None,
            )
            proxy_eval = None
            if proxy_val_loader is not None and proxy_val_ds is not None and len(proxy_val_ds) > 0:
                proxy_total, proxy_parts, proxy_env_pcc, proxy_total_env_pcc, proxy_total_env_mse = eval_loader(
                    proxy_val_loader,
                    len(proxy_val_ds),
                    max_batches=None,
                )
                proxy_eval = {
                    "loss": float(proxy_total.item()),
                    "parts": proxy_parts,
                    "env_avg_pearson": proxy_env_pcc,
                    "total_env_avg_pearson": proxy_total_env_pcc,
                    "total_env_mse": proxy_total_env_mse,
                }

        # log eval / early stop (only rank 0)
        if is_main(rank):
            log_epoch_payload = {
                "epoch": epoch_num,
                "val_loss": val_total.item(),
                "val_loss/env_avg_pearson": val_env_pcc,
                "val_loss/total_env_avg_pearson": val_total_env_pcc,
                "val_loss/total_env_mse": val_total_env_mse,
            }
            for k, v in val_parts.items():
                log_epoch_payload[f"val_loss/{k}"] = float(v)
            log_epoch_payload["train_loss_epoch"] = train_total.item()
            log_epoch_payload["train_loss_epoch/env_avg_pearson"] = train_env_pcc
            log_epoch_payload["train_loss_epoch/total_env_avg_pearson"] = train_total_env_pcc
            log_epoch_payload["train_loss_epoch/total_env_mse"] = train_total_env_mse
            for k, v in train_parts.items():
                log_epoch_payload[f"train_loss_epoch/{k}"] = float(v)
            if proxy_eval is not None:
                log_epoch_payload["val_proxy/loss"] = proxy_eval["loss"]
                log_epoch_payload["val_proxy/env_avg_pearson"] = proxy_eval["env_avg_pearson"]
                log_epoch_payload["val_proxy/total_env_avg_pearson"] = proxy_eval["total_env_avg_pearson"]
                log_epoch_payload["val_proxy/total_env_mse"] = proxy_eval["total_env_mse"]
                for k, v in proxy_eval["parts"].items():
                    log_epoch_payload[f"val_proxy/{k}"] = float(v)
            wandb.log(log_epoch_payload)

            val_loss_value = float(val_total.item())
            improved = False
            if math.isfinite(val_env_pcc):
                if (val_env_pcc > best_val_env_pcc + 1e-8) or (
                    abs(val_env_pcc - best_val_env_pcc) <= 1e-8
                    and val_loss_value < best_val_loss
                ):
                    improved = True
            elif not math.isfinite(best_val_env_pcc) and (val_loss_value < best_val_loss):
                improved = True

            if improved:
                best_val_loss = val_loss_value
                best_val_env_pcc = val_env_pcc
                last_improved = 0
                # collect env scaler and y scalers
                env_scaler_payload = {
                    "mean": env_scaler.mean_.tolist(),
                    "scale": env_scaler.scale_.tolist(),
                    "var": env_scaler.var_.tolist(),
                    "n_features_in": int(train_ds.scaler.n_features_in_),
                    "feature_names_in": list(train_ds.e_cols)
                }

                label_scalers_payload = None
                if hasattr(train_ds, 'label_scalers') and train_ds.label_scalers:
                    label_scalers_payload = {
                        k: {"mean": float(v.mean), "std": float(v.std)}
                        for k, v in train_ds.label_scalers.items()
                    }
                marker_stats_payload = None
                if getattr(train_ds, "marker_stats", None):
                    marker_stats_payload = {
                        "p": train_ds.marker_stats["p"].tolist(),
                        "scale": train_ds.marker_stats["scale"].tolist(),
                        "valid": train_ds.marker_stats["valid"].tolist(),
                        "columns": list(train_ds.marker_stats["columns"]),
                    }

                ckpt = {
                    "model": model.module.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "epoch": epoch_num,
                    "val_loss": val_loss_value,
                    "val_env_avg_pearson": val_env_pcc,
                    "config": {
                        "g_enc": args.g_enc,
                        "e_enc": args.e_enc,
                        "ld_enc": args.ld_enc,
                        "gxe_enc": args.gxe_enc,
                        "g_encoder_type": g_encoder_type,
                        "full_transformer": args.full_transformer,
                        "full_tf_mlp_type": full_tf_mlp_type,
                        "block_size": config.block_size,
                        "n_env_fts": config.n_env_fts,
                        "g_layers": args.g_layers,
                        "ld_layers": args.ld_layers,
                        "mlp_layers": args.mlp_layers,
                        "gxe_layers": args.gxe_layers,
                        "n_head": args.heads,
                        "n_embd": args.emb_size,
                        "moe_num_experts": moe_num_experts,
                        "moe_top_k": moe_top_k,
                        "moe_expert_hidden_dim": moe_expert_hidden_dim,
                        "moe_shared_expert": moe_shared_expert,
                        "moe_shared_expert_hidden_dim": moe_shared_expert_hidden_dim,
                        "moe_loss_weight": moe_loss_weight,
                        "g_input_type": g_input_type,
                        "env_categorical_mode": env_categorical_mode,
                        "env_cat_embeddings": (env_categorical_mode == "onehot"),
                        "val_scheme": val_scheme,
                        "proxy_tester": proxy_tester if val_scheme == "proxy_same_tester" else None,
                        "proxy_holdout_frac": proxy_holdout_frac if val_scheme == "proxy_same_tester" else None,
                        "proxy_validation_mode": proxy_validation_mode,
                        "proxy_disjoint_from_leo": proxy_disjoint_from_leo,
                        "proxy_diagnostic_info": (
                            proxy_val_ds.proxy_info
                            if proxy_val_ds is not None and proxy_val_ds.proxy_info is not None
                            else None
                        ),
                        "loss": args.loss,
                        "loss_weights": args.loss_weights,
                        "scale_targets": args.scale_targets,
                        "calibration_mode": calibration_mode,
                        "use_parent_embeddings": use_parent_embeddings,
                        "use_dual_channel": use_dual_channel,
                        "n_parents": train_ds.n_parents,
                    },
                    "env_scaler": env_scaler_payload,
                    "y_scalers": label_scalers_payload,
                    "marker_stats": marker_stats_payload,
                    "parent_vocab": parent_vocab,
                    "run": {"id": run.id if 'run' in locals() else None,
                            "name": wandb_run_name}
                }
                ckpt_path = Path("checkpoints") / wandb_run_name / f"checkpoint_{epoch_num:04d}.pt"
                torch.save(ckpt, ckpt_path)
                shutil.copy2(ckpt_path, run_ckpt_dir / "best_leo.pt")
                shutil.copy2(ckpt_path, run_ckpt_dir / "latest.pt")
                manifest_path = run_ckpt_dir / "checkpoint_manifest.json"
                manifest = {}
                if manifest_path.exists():
                    try:
                        with open(manifest_path, "r") as f:
                            manifest = json.load(f)
                    except Exception:
                        manifest = {}
                manifest.setdefault("aliases", {})
                manifest["aliases"]["best_leo"] = {
                    "path": str((run_ckpt_dir / "best_leo.pt").resolve()),
                    "epoch": int(epoch_num),
                    "val_env_avg_pearson": float(val_env_pcc),
                    "val_total_env_avg_pearson": float(val_total_env_pcc),
                    "val_total_env_mse": float(val_total_env_mse),
                }
                manifest["aliases"]["latest"] = {
                    "path": str((run_ckpt_dir / "latest.pt").resolve()),
                    "epoch": int(epoch_num),
                    "val_env_avg_pearson": float(val_env_pcc),
                    "val_total_env_avg_pearson": float(val_total_env_pcc),
                    "val_total_env_mse": float(val_total_env_mse),
                }
                if calibration_enabled and val_total_env_mse < best_val_total_env_mse:
                    best_val_total_env_mse = val_total_env_mse
                    shutil.copy2(ckpt_path, run_ckpt_dir / "best_scale.pt")
                    manifest["aliases"]["best_scale"] = {
                        "path": str((run_ckpt_dir / "best_scale.pt").resolve()),
                        "epoch": int(epoch_num),
                        "val_env_avg_pearson": float(val_env_pcc),
                        "val_total_env_avg_pearson": float(val_total_env_pcc),
                        "val_total_env_mse": float(val_total_env_mse),
                    }
                with open(manifest_path, "w") as f:
                    json.dump(manifest, f, indent=2, sort_keys=True)
                print(
                    "*** validation env_avg_pearson improved: "
                    f"{best_val_env_pcc:.5f} (val_loss={best_val_loss:.4e}) ***"
                )
            else:
                last_improved += 1
                print(f"Validation has not improved in {last_improved} steps")
        
        # create a stop flag so all ranks stop training
        stop_flag = torch.tensor([0], device=device)
        if is_main(rank):
            if last_improved > early_stop:
                print(f"*** no improvement for {early_stop} steps, stopping ***")
                stop_flag[0] = 1
        # broadcast stop flag to all ranks
        dist.broadcast(stop_flag, src=0)
        if stop_flag.item() == 1:
            break
                 
        if is_main(rank):
            elapsed = (time.time() - t0) / 60
            print(
                f"[Epoch {epoch_num}] train_loss={train_total.item():.4e} | "
                f"val_loss={val_total.item():.4e} | "
                f"val_env_pcc={val_env_pcc:.5f} | val_total_env_pcc={val_total_env_pcc:.5f} | "
                f"val_total_env_mse={val_total_env_mse:.5f} | best_env_pcc={best_val_env_pcc:.5f} | "
                f"elapsed={elapsed:.2f}m"
            )

    dist.barrier()
    if is_main(rank):
        run.finish()
    cleanup_ddp()

if __name__ == "__main__":
    main()
