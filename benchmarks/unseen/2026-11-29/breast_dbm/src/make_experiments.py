print('writes experiments/*.yaml')
