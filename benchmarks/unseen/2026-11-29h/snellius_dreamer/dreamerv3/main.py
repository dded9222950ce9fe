import importlib
import os
import datetime
import pathlib
import sys
from functools import partial as bind  # alias partial function as bind

# set up module path resolution
folder = pathlib.Path(__file__).parent
sys.path.insert(0, str(folder.parent))  # add parent dir to path
sys.path.insert(1, str(folder.parent.parent))  # add grandparent dir to path
__package__ = folder.name

# import required libraries
import elements
import embodied
import numpy as np
import portal
import ruamel.yaml as yaml

# define supported environment modules and their entry points
ENVIRONMENTS = {
    'dummy': 'embodied.envs.dummy:Dummy',
    'gym': 'embodied.envs.from_gym:FromGym',
    'dm': 'embodied.envs.from_dmenv:FromDM',
    'crafter': 'embodied.envs.crafter:Crafter',
    'dmc': 'embodied.envs.dmc:DMC',
    'atari': 'embodied.envs.atari:Atari',
    'atari100k': 'embodied.envs.atari:Atari',
    'dmlab': 'embodied.envs.dmlab:DMLab',
    'minecraft': 'embodied.envs.minecraft:Minecraft',
    'loconav': 'embodied.envs.loconav:LocoNav',
    'pinpad': 'embodied.envs.pinpad:PinPad',
    'langroom': 'embodied.envs.langroom:LangRoom',
    'procgen': 'embodied.envs.procgen:ProcGen',
    'bsuite': 'embodied.envs.bsuite:BSuite'
}


def main(argv=None):
    from .agent import Agent
    # print agent banner lines
    [elements.print(line) for line in Agent.banner]

    # load configuration from yaml file
    configs = elements.Path(folder / 'configs.yaml').read()
    configs = yaml.YAML(typ='safe').load(configs)
    parsed, other = elements.Flags(configs=['defaults']).parse_known(argv)
    config = elements.Config(configs['defaults'])
    for name in parsed.configs:
        config = config.update(configs[name])
    config = elements.Flags(config).parse(other)
    config = config.update(logdir=(
        config.logdir.format(timestamp=elements.timestamp())))

    # set replica index from job environment variable
    if 'JOB_COMPLETION_INDEX' in os.environ:
        config = config.update(replica=int(os.environ['JOB_COMPLETION_INDEX']))
    print('Replica:', config.replica, '/', config.replicas)

    # initialize log directory and save config
    logdir = elements.Path(config.logdir)
    print('Logdir:', logdir)
    print('Run script:', config.script)
    if not config.script.endswith(('_env', '_replay')):
        logdir.mkdir()
        config.save(logdir / 'config.yaml')

    # initialize timers and portal interface
    def init():
        elements.timer.global_timer.enabled = config.logger.timer

    portal.setup(
        errfile=config.errfile and logdir / 'error',
        clientkw=dict(logging_color='cyan'),
        serverkw=dict(logging_color='cyan'),
        initfns=[init],
        ipv6=config.ipv6,
    )

    # prepare arguments for run script
    args = elements.Config(
        **config.run,
        replica=config.replica,
        replicas=config.replicas,
        logdir=config.logdir,
        batch_size=config.batch_size,
        batch_length=config.batch_length,
        report_length=config.report_length,
        consec_train=config.consec_train,
        consec_report=config.consec_report,
        replay_context=config.replay_context,
    )

    # dispatch to the appropriate script entry point
    if config.script == 'train':
        embodied.run.train(
            bind(make_agent, config),
            bind(make_replay, config, 'replay'),
            bind(make_env, config),
            bind(make_stream, config),
            bind(make_logger, config),
            args)

    elif config.script == 'train_eval':
        embodied.run.train_eval(
            bind(make_agent, config),
            bind(make_replay, config, 'replay'),
            bind(make_replay, config, 'eval_replay', 'eval'),
            bind(make_env, config),
            bind(make_env, config),
            bind(make_stream, config),
            bind(make_logger, config),
            args)

    elif config.script == 'eval_only':
        embodied.run.eval_only(
            bind(make_agent, config),
            bind(make_env, config),
            bind(make_logger, config),
            args)

    elif config.script == 'parallel':
        embodied.run.parallel.combined(
            bind(make_agent, config),
            bind(make_replay, config, 'replay'),
            bind(make_replay, config, 'replay_eval', 'eval'),
            bind(make_env, config),
            bind(make_env, config),
            bind(make_stream, config),
            bind(make_logger, config),
            args)

    elif config.script == 'parallel_env':
        is_eval = config.replica >= args.envs
        embodied.run.parallel.parallel_env(
            bind(make_env, config), config.replica, args, is_eval)

    elif config.script == 'parallel_envs':
        is_eval = config.replica >= args.envs
        embodied.run.parallel.parallel_envs(
            bind(make_env, config), bind(make_env, config), args)

    elif config.script == 'parallel_replay':
        embodied.run.parallel.parallel_replay(
            bind(make_replay, config, 'replay'),
            bind(make_replay, config, 'replay_eval', 'eval'),
            bind(make_stream, config),
            args)

    else:
        raise NotImplementedError(config.script)


def make_agent(config):
    """
    Create agent instance using configuration
    """
    from .agent import Agent
    env = make_env(config, 0)
    notlog = lambda k: not k.startswith('log/')
    obs_space = {k: v for k, v in env.obs_space.items() if notlog(k)}
    act_space = {k: v for k, v in env.act_space.items() if k != 'reset'}
    env.close()
    if config.random_agent:
        return embodied.RandomAgent(obs_space, act_space)
    cpdir = elements.Path(config.logdir)
    cpdir = cpdir.parent if config.replicas > 1 else cpdir
    return Agent(obs_space, act_space, elements.Config(
        **config.agent,
        logdir=config.logdir,
        seed=config.seed,
        jax=config.jax,
        batch_size=config.batch_size,
        batch_length=config.batch_length,
        replay_context=config.replay_context,
        report_length=config.report_length,
        replica=config.replica,
        replicas=config.replicas,
    ))


def make_logger(config):
    """
    Construct logger with selected outputs
    """
    step = elements.Counter()
    logdir = config.logdir
    multiplier = config.env.get(config.task.split('_')[0], {}).get('repeat', 1)
    outputs = []
    outputs.append(elements.logger.TerminalOutput(config.logger.filter, 'Agent'))
    for output in config.logger.outputs:
        if output == 'jsonl':
            outputs.append(elements.logger.JSONLOutput(logdir, 'metrics.jsonl'))
            outputs.append(elements.logger.JSONLOutput(
                logdir, 'scores.jsonl', 'episode/score'))
        elif output == 'tensorboard':
            outputs.append(elements.logger.TensorBoardOutput(
                logdir, config.logger.fps))
        elif output == 'expa':
            exp = logdir.split('/')[-4]
            run = '/'.join(logdir.split('/')[-3:])
            proj = 'embodied' if logdir.startswith(('/cns/', 'gs://')) else 'debug'
            outputs.append(elements.logger.ExpaOutput(
                exp, run, proj, config.logger.user, config.flat))
        elif output == 'wandb':
            name = config.run_name + ''.join(logdir.split('logdir')[-1])
            wnb_logger = elements.logger.WandBOutput(name=name,
                                                       entity="dreamerz",
                                                       project=config.project)
            # log generic params
            wnb_logger._wandb.log({
                "batch_size": config.batch_size,
                "seed": config.seed,
                "task": config.task,
                "steps": config.run.steps,
                "train_ratio": config.run.train_ratio,
                "logdir": config.logdir,
            })
            outputs.append(wnb_logger)
        elif output == 'scope':
            outputs.append(elements.logger.ScopeOutput(elements.Path(logdir)))
        else:
            raise NotImplementedError(output)
    logger = elements.Logger(step, outputs, multiplier)
    return logger


def make_replay(config, folder, mode='train'):
    """
    Initialize replay buffer with config-based parameters
    """
    batlen = config.batch_length if mode == 'train' else config.report_length
    consec = config.consec_train if mode == 'train' else config.consec_report
    capacity = config.replay.size if mode == 'train' else config.replay.size / 10
    length = consec * batlen + config.replay_context
    assert config.batch_size * length <= capacity

    directory = elements.Path(config.logdir) / folder
    if config.replicas > 1:
        directory /= f'{config.replica:05}'
    kwargs = dict(
        length=length, capacity=int(capacity), online=config.replay.online,
        chunksize=config.replay.chunksize, directory=directory)

    if config.replay.fracs.uniform < 1 and mode == 'train':
        assert config.jax.compute_dtype in ('bfloat16', 'float32'), (
            'gradient scaling for low-precision training can produce invalid loss '
            'outputs that are incompatible with prioritized replay.')
        recency = 1.0 / np.arange(1, capacity + 1) ** config.replay.recexp
        selectors = embodied.replay.selectors
        kwargs['selector'] = selectors.Mixture(dict(
            uniform=selectors.Uniform(),
            priority=selectors.Prioritized(**config.replay.prio),
            recency=selectors.Recency(recency),
        ), config.replay.fracs)

    return embodied.replay.Replay(**kwargs)


def make_env(config, index, **overrides):
    """
    Construct and wrap the environment with common wrappers
    """
    suite, task = config.task.split('_', 1)
    if suite == 'memmaze':
        from embodied.envs import from_gym
        import memory_maze  # noqa
        ENVIRONMENTS["memmaze"] = lambda task, **kw: from_gym.FromGym(f'MemoryMaze-{task}-v0', **kw)
    environment = ENVIRONMENTS[suite]
    if isinstance(environment, str):
        module, cls = environment.split(':')
        module = importlib.import_module(module)
        environment = getattr(module, cls)
    kwargs = config.env.get(suite, {})
    kwargs.update(overrides)
    if kwargs.pop('use_seed', False):
        kwargs['seed'] = hash((config.seed, index)) % (2 ** 32 - 1)
    if kwargs.pop('use_logdir', False):
        kwargs['logdir'] = elements.Path(config.logdir) / f'env{index}'
    env = environment(task, **kwargs)

    return wrap_env(env, config)


def wrap_env(env, config):
    """
    Apply common wrappers for dtype unification, action clipping etc.
    """
    for name, space in env.act_space.items():
        if not space.discrete:
            env = embodied.wrappers.NormalizeAction(env, name)
    env = embodied.wrappers.UnifyDtypes(env)
    env = embodied.wrappers.CheckSpaces(env)
    for name, space in env.act_space.items():
        if not space.discrete:
            env = embodied.wrappers.ClipAction(env, name)
    return env


def make_stream(config, replay, mode):
    """
    Construct data stream with consecutive sampling logic
    """
    fn = bind(replay.sample, config.batch_size, mode)
    stream = embodied.streams.Stateless(fn)
    stream = embodied.streams.Consec(
        stream,
        length=config.batch_length if mode == 'train' else config.report_length,
        consec=config.consec_train if mode == 'train' else config.consec_report,
        prefix=config.replay_context,
        strict=(mode == 'train'),
        contiguous=True)

    return stream


# run main entry
if __name__ == '__main__':
    main()
