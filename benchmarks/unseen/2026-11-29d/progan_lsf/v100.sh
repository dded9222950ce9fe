cd /home/shenghuahe/proGAN
python train.py --gpu '0,1,2,3'