import colossalai
from colossalai.booster import Booster
from colossalai.booster.plugin import TorchDDPPlugin

colossalai.launch_from_torch()
booster = Booster(plugin=TorchDDPPlugin())
